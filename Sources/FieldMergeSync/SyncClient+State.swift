import FieldMerge
import FieldMergeSQLite

extension SyncClient {
    /// Where the client stands now (``SyncState``), its count of unsynced changes read afresh.
    public var state: SyncState {
        // It reads the store, so a catch-up's open transaction commits first, as for a write.
        releaseCatchUp()
        if let count = try? store.unsyncedCount() { updateState { $0.unsynced = count } }
        return currentState
    }

    /// The client's state now, then again after every change of it (a sync starts, a round
    /// ends, a sync ends, a write commits, live mode connects or disconnects), until the
    /// caller stops iterating. By default a slow reader gets the newest state only.
    public func states(
        bufferingPolicy: AsyncStream<SyncState>.Continuation.BufferingPolicy = .bufferingNewest(1)
    ) -> AsyncStream<SyncState> {
        let (stream, continuation) = AsyncStream.makeStream(of: SyncState.self, bufferingPolicy: bufferingPolicy)
        let token = nextStateListener
        nextStateListener += 1
        stateListeners[token] = continuation
        continuation.onTermination = { [weak self] _ in
            guard let self else { return }
            Task { await self.removeStateListener(token) }
        }
        continuation.yield(state)
        return stream
    }

    private func removeStateListener(_ token: Int) { stateListeners[token] = nil }

    /// Changes the state and tells every listener, when anything changed.
    func updateState(_ change: (inout SyncState) -> Void) {
        var next = currentState
        change(&next)
        guard next != currentState else { return }
        currentState = next
        for listener in stateListeners.values { listener.yield(next) }
    }

    /// Counts the unsynced changes again, when anyone listens (after a commit).
    func refreshUnsynced() {
        guard !stateListeners.isEmpty, let count = try? store.unsyncedCount() else { return }
        updateState { $0.unsynced = count }
    }

    /// A sync ended: its outcome goes into the state.
    func syncEnded(_ result: Result<SyncSummary, SyncError>) {
        let now = store.wall.milliseconds()
        updateState { state in
            state.isSyncing = isSyncing
            state.progress = nil
            switch result {
            case .success:
                state.lastSynced = now
                state.lastError = nil
            case .failure(let error):
                state.lastError = error
            }
        }
        refreshUnsynced()
    }
}
