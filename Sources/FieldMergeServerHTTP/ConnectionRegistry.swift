import NIOCore
import Synchronization

/// The open connections of one ``SyncHTTPServer``, for its connection limit
/// (``SyncHTTPServer/Configuration/maxConnections``).
///
/// At the limit a new connection takes the place of the one that has waited the longest for
/// (the rest of) a request; connections whose request is being answered are never closed for
/// it. A client that holds connections open by sending nothing, or a byte now and then, so
/// loses the oldest of them to each newcomer, and a request such as `GET /health`, answered
/// within milliseconds, gets in. Shared by the event loops, behind a lock.
final class ConnectionRegistry: Sendable {
    private struct Entry {
        let channel: any Channel
        /// Since when it has been waiting for a request; nil while one is answered.
        var waitingFor: NIODeadline?
    }

    let limit: Int
    private let entries = Mutex<[ObjectIdentifier: Entry]>([:])

    init(limit: Int) { self.limit = limit }

    /// Counts the new connection `channel` in, and returns the connection to close for it at
    /// the limit: the one waiting longest, or `channel` itself (not counted) when every
    /// connection is being answered.
    func admit(_ channel: any Channel, now: NIODeadline) -> (any Channel)? {
        entries.withLock { entries in
            var evicted: (any Channel)?
            if entries.count >= limit {
                let candidates = entries.compactMap { key, entry in entry.waitingFor.map { (key, $0) } }
                guard let oldest = candidates.min(by: { $0.1 < $1.1 }) else { return channel }
                evicted = entries.removeValue(forKey: oldest.0)?.channel
            }
            entries[ObjectIdentifier(channel)] = Entry(channel: channel, waitingFor: now)
            return evicted
        }
    }

    /// Records what `channel` is doing (no effect once it was closed or evicted).
    func update(_ channel: any Channel, waitingFor: NIODeadline?) {
        entries.withLock { $0[ObjectIdentifier(channel)]?.waitingFor = waitingFor }
    }

    /// Counts a closed connection out.
    func remove(_ channel: any Channel) {
        _ = entries.withLock { $0.removeValue(forKey: ObjectIdentifier(channel)) }
    }

    /// The connections counted now.
    var count: Int { entries.withLock { $0.count } }
}
