import FieldMerge

/// A transaction that stays open across several store calls, for the sync client's
/// catch-up: it applies several pages in it and commits them together (Specs/store.md,
/// "Several catch-up pages per transaction").
///
/// While it is open, every store call that writes joins it, as inside
/// ``transaction(origin:_:)``: ``apply(_:beforeCommit:)`` takes no savepoint, so a call
/// that fails half-way leaves the held transaction to roll back whole. Its changes reach
/// ``onChange`` and the store's listeners once, when it commits (origin `sync`), and never
/// when it rolls back. The owner must not let other work use the store while it is open
/// (the sync client commits it first).
extension Store {
    /// Whether a held transaction is open.
    package var isHoldingTransaction: Bool { held != nil }

    /// Opens a held transaction (`BEGIN IMMEDIATE`), marked as the store's own writes, after
    /// taking in what the app wrote with plain SQL before it.
    /// - Throws: ``StoreError/Code/aborted`` when a transaction is already open (one the
    ///   app began with plain SQL and left open); ``StoreError`` when SQLite fails.
    package func beginHeldTransaction() throws(StoreError) {
        guard held == nil && !database.isInTransaction else {
            throw StoreError(.aborted, "a transaction is already open on the store's connection")
        }
        let saved = HeldState(clock: clock, maxRevision: maxRevision, nextTemporaryID: nextTemporaryID, scopeState: scopeState)
        pendingChange = nil
        do {
            try database.run("BEGIN IMMEDIATE")
            held = saved
            try markOwnWrites()
            ownWrites = true
            try absorbCapturedWrites()
        } catch {
            rollBackHeldTransaction()
            throw Self.storeError(error)
        }
    }

    /// Commits the held transaction; then ``onChange`` and the store's listeners hear one
    /// ``StoreChange`` for all of it. When the commit fails everything in it is rolled back
    /// (with the in-memory state) and the error thrown.
    package func commitHeldTransaction() throws(StoreError) {
        guard held != nil else { return }
        do {
            try unmarkOwnWrites()
            ownWrites = false
            try database.run("COMMIT")
        } catch {
            rollBackHeldTransaction()
            throw Self.storeError(error)
        }
        held = nil
        if var change = pendingChange {
            pendingChange = nil
            change.origin = .sync
            if !change.isEmpty {
                onChange?(change)
                observers.publish(change, from: self)
            }
        }
    }

    /// Rolls the held transaction back, with the store's in-memory state (clock, revision,
    /// counters) as they were when it opened; nobody hears of it.
    package func rollBackHeldTransaction() {
        if database.isInTransaction { try? database.run("ROLLBACK") }
        if let saved = held {
            (clock, maxRevision, nextTemporaryID, scopeState) = (saved.clock, saved.maxRevision, saved.nextTemporaryID, saved.scopeState)
        }
        held = nil
        pendingChange = nil
        ownWrites = false
    }
}

/// The in-memory state of a store when its held transaction opened, restored if it rolls back.
struct HeldState {
    var clock: HybridClock
    var maxRevision: Int64
    var nextTemporaryID: Int64
    var scopeState: String?
}
