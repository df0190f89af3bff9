import FieldMerge

/// What one committed store transaction changed of one ``StoredRecord`` type: the ids, for
/// a screen to reload what it shows (read the values with ``Store/fetch(_:id:)`` or a query).
public struct RecordChange<Row: StoredRecord>: Sendable, Equatable {
    public var origin: StoreChange.Origin
    /// Ids of records that appeared (created here, or received).
    public var inserted: [Int64]
    /// Ids of records whose values changed.
    public var updated: [Int64]
    /// Ids of records that are gone (deleted here, by a cascade, or by others).
    public var deleted: [Int64]
    /// Ids of records that left what this device may hold (``StoreChange/left``).
    public var left: [Int64]
    /// Temporary ids the server replaced by permanent ones.
    public var remapped: [StoreChange.Remap]
    /// The conflicts the sync's merges decided on records of this type.
    public var conflicts: [FieldConflict]
    /// Every record was thrown away (``Store/resetToEmpty()``): reload everything.
    public var isReset: Bool

    /// The part of `change` about `Row`'s entity; nil when it has none.
    public init?(_ change: StoreChange) {
        let entity = Row.table.entity.name
        guard change.touches(entity) else { return nil }
        origin = change.origin
        inserted = change.inserted[entity] ?? []
        updated = change.updated[entity] ?? []
        deleted = change.deleted[entity] ?? []
        left = change.left[entity] ?? []
        remapped = change.remapped.filter { $0.entity == entity }
        conflicts = change.conflicts.filter { $0.entity == entity }
        isReset = change.isReset
    }
}

extension StoreChange {
    /// Whether the change touches records of `entity` (or reset everything).
    public func touches(_ entity: String) -> Bool {
        isReset || inserted[entity] != nil || updated[entity] != nil || deleted[entity] != nil || left[entity] != nil
            || remapped.contains { $0.entity == entity } || conflicts.contains { $0.entity == entity }
    }
}

extension Store {
    /// Every change to records of `type` from now on, one ``RecordChange`` per committed
    /// transaction that touches them: local writes, applied syncs, and writes made with
    /// plain SQL once the store takes them in (its next transaction, or
    /// ``captureExternalWrites()``).
    ///
    /// ```swift
    /// let feed = store.changes(of: Note.self)
    /// Task { for await change in feed { reload(change.inserted + change.updated) } }
    /// ```
    ///
    /// Each call is a new subscription, independent of ``onChange``; it ends, and its
    /// listener is released, when the iterating task is cancelled. Changes are buffered for
    /// a slow reader, never dropped.
    public func changes<R: StoredRecord>(of type: R.Type) -> AsyncStream<RecordChange<R>> {
        let (stream, continuation) = AsyncStream.makeStream(of: RecordChange<R>.self)
        let id = observers.add { _, change in
            if let typed = RecordChange<R>(change) { continuation.yield(typed) }
        }
        continuation.onTermination = { [observers] _ in observers.remove(id) }
        return stream
    }

    /// A live query: the records `query` selects now, first, then again after every
    /// committed transaction that touches `R`'s table (local writes, applied syncs, and
    /// plain SQL once the store takes it in: its next transaction, or
    /// ``captureExternalWrites()``). Transactions on other tables do not refresh it.
    ///
    /// ```swift
    /// let urgent = try store.observe(Note.all.filter(\.severity >= 3).order(\.title))
    /// Task { for try await notes in urgent { show(notes) } }   // now, then after each change
    /// ```
    ///
    /// The query runs again on the thread that committed, right after the commit (the
    /// store's owner: the sync client's executor for a client's store). A query that fails
    /// then ends the sequence with its error. Cancelling the iterating task ends the
    /// sequence and releases its listener.
    ///
    /// - Parameters:
    ///   - query: What to fetch.
    ///   - bufferingPolicy: What a slow reader gets: every result (the default), or only
    ///     the newest (`.bufferingNewest(1)`).
    /// - Throws: What `fetchAll(_:)` of a query throws for the first result.
    public func observe<R: StoredRecord & Sendable>(
        _ query: RecordQuery<R>,
        bufferingPolicy: AsyncThrowingStream<[R], any Error>.Continuation.BufferingPolicy = .unbounded
    ) throws(StoreError) -> AsyncThrowingStream<[R], any Error> {
        try observeAfterFirst(query, bufferingPolicy: bufferingPolicy).values
    }

    /// The first result of `query`, and a live query whose first element is that result.
    func observeAfterFirst<R: StoredRecord & Sendable>(
        _ query: RecordQuery<R>, bufferingPolicy: AsyncThrowingStream<[R], any Error>.Continuation.BufferingPolicy
    ) throws(StoreError) -> (first: [R], values: AsyncThrowingStream<[R], any Error>) {
        let first = try fetchAll(query)
        let (stream, continuation) = AsyncThrowingStream.makeStream(of: [R].self, bufferingPolicy: bufferingPolicy)
        continuation.yield(first)
        let entity = R.table.entity.name
        let id = observers.add { store, change in
            guard change.touches(entity) else { return }
            do { continuation.yield(try store.fetchAll(query)) } catch { continuation.finish(throwing: error) }
        }
        continuation.onTermination = { [observers] _ in observers.remove(id) }
        return (first, stream)
    }

    /// How many typed change feeds and live queries listen now (released ones are not counted).
    public var listenerCount: Int { observers.listening }
}
