import Foundation
import Synchronization

/// One line on standard error that a sync rewrites as pages arrive (`\r`, erase to the end of
/// the line), shown only when standard error is a terminal: logs and pipes get nothing.
public final class SyncProgressLine: Sendable {
    private let enabled: Bool
    private let drawn = Atomic(false)

    /// - Parameter enabled: nil asks whether standard error is a terminal.
    public init(enabled: Bool? = nil) {
        self.enabled = enabled ?? (isatty(STDERR_FILENO) != 0)
    }

    /// Rewrites the line with `progress`.
    public func show(_ progress: ReplicaSyncProgress) {
        guard enabled else { return }
        let more = progress.hasMore ? ", more to come" : ""
        let line = "\r\u{1B}[Kfieldmerge sync: \(progress.rounds) requests, \(progress.received) records received, \(progress.sent) sent\(more)"
        FileHandle.standardError.write(Data(line.utf8))
        drawn.store(true, ordering: .relaxed)
    }

    /// Ends the line, if one was drawn, so what follows starts on a line of its own.
    public func finish() {
        guard enabled, drawn.exchange(false, ordering: .relaxed) else { return }
        FileHandle.standardError.write(Data("\r\u{1B}[K".utf8))
    }
}
