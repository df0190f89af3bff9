import FieldMerge

extension Store {
    /// Runs `body` as one transaction of the app's: everything it writes through the store
    /// (inserts, saves, deletes with their cascades, retries, discards) and with plain SQL on
    /// ``database`` commits together or not at all.
    ///
    /// - When `body` throws, nothing of it stays: not in the app's tables, nor in the outbox,
    ///   nor in the change log; the error is rethrown unchanged.
    /// - Called inside another transaction it runs in a savepoint of it: a throw undoes only
    ///   this part, and the outer block may catch it and go on.
    /// - After the outermost transaction commits, ``onChange`` hears one ``StoreChange`` for
    ///   the whole block (none when it rolls back or changed nothing).
    ///
    /// ```swift
    /// try store.transaction {
    ///     var milk = Reminder(title: "Milk")
    ///     try store.insert(&milk)
    ///     try? store.transaction {                 // a savepoint
    ///         var bread = Reminder(title: "Bread")
    ///         try store.insert(&bread)
    ///         throw CancellationError()            // undoes the bread only
    ///     }
    /// }                                            // one StoreChange: the milk
    /// ```
    ///
    /// - Throws: What `body` throws, after rolling back; ``StoreError`` when the transaction
    ///   cannot begin or commit.
    public func transaction<T>(_ body: () throws -> T) throws -> T {
        if database.isInTransaction {
            // A savepoint; the marker (if any) is the outer transaction's.
            return try savepoint(body)
        }
        return try perform(origin: .local) { () throws -> T in
            // Plain SQL in `body` is the app's: the capture triggers take it (and the store's
            // calls in `body` mark their own writes, ``write(origin:savepoint:_:)``).
            try unmarkOwnWrites()
            ownWrites = false
            let result = try body()
            try markOwnWrites()
            ownWrites = true
            try absorbCapturedWrites()
            return result
        }
    }

    /// Runs `body` in one transaction; on any error everything it wrote is rolled back and
    /// the store's in-memory state (clock, counters) restored.
    ///
    /// - Parameter savepoint: Inside a caller's transaction, whether `body` runs in a
    ///   savepoint of it (undone alone when it throws). Without one SQLite keeps no copy of
    ///   the pages `body` changes, and the caller's transaction must roll back on an error.
    func write<T>(origin: StoreChange.Origin = .local, savepoint: Bool = true, _ body: () throws -> T) throws(StoreError) -> T {
        do {
            if database.isInTransaction {
                // Inside a store call: a savepoint of it (or nothing), which marks, captures
                // and reports nothing of its own.
                if ownWrites { return savepoint ? try self.savepoint(body) : try body() }
                // Inside a transaction of the app's (``transaction(_:)``, or
                // `database.transaction`): its own writes are marked while it runs, and what
                // the app wrote with plain SQL before is taken in first.
                return savepoint ? try self.savepoint { try marked(body) } : try marked(body)
            }
            return try perform(origin: origin) { () throws -> T in
                try absorbCapturedWrites()
                return try body()
            }
        } catch {
            throw Self.storeError(error)
        }
    }

    /// `body` with its writes marked as the store's own, after taking in what the app wrote
    /// with plain SQL before it.
    private func marked<T>(_ body: () throws -> T) throws -> T {
        try markOwnWrites()
        ownWrites = true
        defer { ownWrites = false }
        try absorbCapturedWrites()
        let result = try body()
        try unmarkOwnWrites()
        return result
    }

    /// The outermost transaction: marked as the store's own, reported to ``onChange`` (and the
    /// store's own listeners) once after it commits; on an error rolled back with the in-memory state, the error
    /// rethrown unchanged.
    private func perform<T>(origin: StoreChange.Origin, _ body: () throws -> T) throws -> T {
        let saved = (clock, maxRevision, nextTemporaryID, scopeState)
        pendingChange = nil
        defer { ownWrites = false }
        do {
            let result = try database.transaction(.immediate) { () throws -> T in
                try markOwnWrites()
                ownWrites = true
                let result = try body()
                try unmarkOwnWrites()
                return result
            }
            if var change = pendingChange {
                pendingChange = nil
                change.origin = origin
                if !change.isEmpty {
                    onChange?(change)
                    observers.publish(change, from: self)
                }
            }
            return result
        } catch {
            pendingChange = nil
            (clock, maxRevision, nextTemporaryID, scopeState) = saved
            throw error
        }
    }

    /// A savepoint of the transaction in progress: on an error only `body`'s part is undone,
    /// with what it noted for the change event and the in-memory state.
    private func savepoint<T>(_ body: () throws -> T) throws -> T {
        let saved = (clock, maxRevision, nextTemporaryID, scopeState, pendingChange, ownWrites)
        do {
            return try database.transaction(.immediate, body)
        } catch {
            (clock, maxRevision, nextTemporaryID, scopeState, pendingChange, ownWrites) = saved
            throw error
        }
    }

    /// Runs `body` as one store transaction (the sync client applies a response in one, so
    /// that no write from another connection slips between reading local rows and writing
    /// the merged ones; writes with plain SQL made before it are taken in first).
    package func transaction<T>(origin: StoreChange.Origin, _ body: () throws -> T) throws(StoreError) -> T {
        try write(origin: origin, body)
    }
}
