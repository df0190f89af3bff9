import Dispatch
import FieldMergeSync
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Waits for SIGINT or SIGTERM (`fieldmerge sync --live`): made before the wait, so a signal
/// that comes early is not lost; the process is not killed by it, the command ends cleanly.
final class Interruption: @unchecked Sendable {
    private let queue = DispatchQueue(label: "fieldmerge.interruption")
    private var sources: [any DispatchSourceSignal] = []
    private var signalled = false
    private var waiters: [CheckedContinuation<Void, Never>] = []

    init() {
        for number in [SIGINT, SIGTERM] {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler { [unowned self] in
                signalled = true
                for waiter in waiters { waiter.resume() }
                waiters = []
            }
            source.resume()
            sources.append(source)
        }
    }

    /// Returns once a signal came.
    func wait() async {
        await withCheckedContinuation { continuation in
            queue.async { [self] in
                if signalled { continuation.resume() } else { waiters.append(continuation) }
            }
        }
    }
}

/// One line of `fieldmerge sync --live` per live event.
enum LiveLine {
    static func text(_ outcome: LiveOutcome) -> String {
        switch outcome {
        case .connected(let revision): return "connected, server at revision \(revision)"
        case .applied(let summary, let revision): return "applied \(summary.received) records pushed by the server (revision \(revision))"
        case .synced(let summary, let revision):
            return "synced: \(summary.rounds) requests, \(summary.received) received, \(summary.sent) sent (revision \(revision))"
        case .syncFailed(let error): return "sync failed: \(error)"
        case .disconnected(let error, let retry):
            return "disconnected\(error.map { " (\($0))" } ?? ""), reconnecting in \(retry.components.seconds).\(retry.components.attoseconds / 100_000_000_000_000_000) s"
        }
    }
}
