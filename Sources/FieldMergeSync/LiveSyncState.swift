#if canImport(Observation)
import Observation
import Synchronization

/// A client's ``SyncState`` for SwiftUI: ``state`` follows ``SyncClient/states(bufferingPolicy:)``
/// on the main actor.
///
/// A view keeps one in its state (`@State var sync = LiveSyncState(client)`) and shows
/// `sync.state.isSyncing`, `sync.state.unsynced.total` or `sync.state.lastError`. It is
/// `@Observable` (Observation, also on Linux): a view that reads ``state`` redraws when it
/// changes. It stops when released or on ``cancel()``.
@MainActor @Observable
public final class LiveSyncState {
    /// The client's state as last heard; the default state until the first one arrives.
    public private(set) var state = SyncState()
    private let task = Mutex<Task<Void, Never>?>(nil)

    /// Follows `client`'s state.
    public init(_ client: SyncClient) {
        task.withLock {
            $0 = Task { [weak self] in
                for await state in await client.states() {
                    guard let self else { return }
                    self.state = state
                }
            }
        }
    }

    /// Stops following; ``state`` keeps the last one heard.
    public func cancel() {
        task.withLock { $0?.cancel() }
    }

    deinit {
        task.withLock { $0?.cancel() }
    }
}
#endif
