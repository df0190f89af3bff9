import FieldMergeSQLite

extension SyncClient {
    /// Throws away the local data and every change that has not reached the server, and
    /// downloads everything again: for a replica the app no longer trusts. Waits for a sync
    /// in flight to end first.
    ///
    /// - Returns: What the download did.
    /// - Throws: ``SyncError``: the reset itself is one store transaction (done or not);
    ///   a failed download leaves an empty replica that the next ``sync(maxRounds:progress:)``
    ///   fills.
    public func reset() async throws(SyncError) -> SyncSummary {
        await waitForSyncs()
        do {
            try store.resetToEmpty()
        } catch {
            throw SyncError(classifying: error, completed: SyncSummary())
        }
        return try await sync()
    }

    /// Every change to the store from now on, one `StoreChange` per committed transaction:
    /// local writes through ``write(_:)`` and applied sync responses, with the ids inserted,
    /// updated and deleted, temporary ids remapped, and the conflicts the merges decided.
    ///
    /// ```swift
    /// for await change in await client.changes() {
    ///     if let ids = change.updated["tasks"] { reload(ids) }
    /// }
    /// ```
    ///
    /// Each call is a new subscription; it ends when the iterating task is cancelled. Changes
    /// are buffered for a slow reader, never dropped.
    public func changes() -> AsyncStream<StoreChange> {
        let (stream, continuation) = AsyncStream.makeStream(of: StoreChange.self)
        let id = subscribe { continuation.yield($0) }
        continuation.onTermination = { _ in Task { await self.unsubscribe(id) } }
        return stream
    }

    /// Calls `observer` with every change to the store from now on (for code that is not
    /// async), on the client's executor, right after the change commits: keep it short, and
    /// hand work to another queue. Returns a token for ``removeObserver(_:)``.
    @discardableResult
    public func addObserver(_ observer: @escaping @Sendable (StoreChange) -> Void) -> Int {
        subscribe(observer)
    }

    /// Stops calling the observer `token` names.
    public func removeObserver(_ token: Int) { unsubscribe(token) }

    private func subscribe(_ observer: @escaping @Sendable (StoreChange) -> Void) -> Int {
        if store.onChange == nil {
            store.onChange = { [unowned self] change in
                self.assumeIsolated { client in client.publish(change) }
            }
        }
        nextObserver += 1
        observers[nextObserver] = observer
        return nextObserver
    }

    private func unsubscribe(_ id: Int) {
        observers[id] = nil
        if observers.isEmpty { store.onChange = nil }
    }

    private func publish(_ change: StoreChange) {
        for observer in observers.values { observer(change) }
    }
}
