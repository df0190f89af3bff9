import FieldMergeSQLite

extension SyncClient {
    /// Every change to records of `type` from now on, one `RecordChange` per committed
    /// transaction that touches them: local writes through ``write(_:)`` and applied sync
    /// responses (`Store.changes(of:)` on the client's store):
    /// `for await change in await client.changes(of: Note.self) { reload(change.updated) }`.
    ///
    /// Each call is a new subscription; it ends, and its listener is released, when the
    /// iterating task is cancelled. Changes are buffered for a slow reader, never dropped.
    public func changes<R: StoredRecord>(of type: R.Type) -> AsyncStream<RecordChange<R>> {
        store.changes(of: type)
    }

    /// A live query on the client's store (`Store.observe(_:bufferingPolicy:)`): what `query`
    /// selects now, then again after every local write and applied sync that touches its
    /// table, fetched on the client's executor right after the commit. Hand it to
    /// `LiveQuery` for SwiftUI: `LiveQuery(try await client.observe(Note.all.order(\.title)))`.
    ///
    /// - Parameters:
    ///   - query: What to fetch.
    ///   - bufferingPolicy: What a slow reader gets: every result (the default), or only the
    ///     newest (`.bufferingNewest(1)`).
    /// - Throws: `StoreError` when the first fetch fails.
    public func observe<R: StoredRecord & Sendable>(
        _ query: RecordQuery<R>,
        bufferingPolicy: AsyncThrowingStream<[R], any Error>.Continuation.BufferingPolicy = .unbounded
    ) throws(StoreError) -> AsyncThrowingStream<[R], any Error> {
        releaseCatchUp()
        return try store.observe(query, bufferingPolicy: bufferingPolicy)
    }
}
