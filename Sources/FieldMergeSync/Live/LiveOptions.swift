import FieldMergeProtocol

/// How live mode behaves (``SyncClient/startLive(over:options:)``).
public struct LiveOptions: Sendable {
    /// How long after a local ``SyncClient/write(_:)`` the sync that sends it starts; writes
    /// within that time go in one request. 50 ms by default.
    public var debounce: Duration = .milliseconds(50)
    /// The wait before opening a failed channel again: doubled after each failure in a row,
    /// up to ``maxBackoff``, each wait drawn between half and all of it (jitter, so that a
    /// fleet does not come back at one instant after a server restart). 0.5 s by default.
    public var initialBackoff: Duration = .milliseconds(500)
    /// The longest wait before opening the channel again. 30 s by default.
    public var maxBackoff: Duration = .seconds(30)
    /// A second channel, for when the first fails ``fallbackAfter`` times in a row (long-poll,
    /// for a network whose proxy buffers Server-Sent Events); nil: none.
    public var fallback: (any LiveChannel)?
    /// Failures in a row of the first channel before live mode uses ``fallback`` for the
    /// rest of the session. 3 by default.
    public var fallbackAfter = 3

    public init(fallback: (any LiveChannel)? = nil) {
        self.fallback = fallback
    }

    /// The wait after the `failures`-th failure in a row, with `unit` in 0...1 as its jitter.
    func backoff(after failures: Int, unit: Double) -> Duration {
        let doubled = initialBackoff * (1 << min(max(failures - 1, 0), 20))
        let capped = min(doubled, maxBackoff)
        return capped * (0.5 + 0.5 * min(max(unit, 0), 1))
    }
}

/// What live mode did, in order (``SyncClient/startLive(over:options:)``).
public enum LiveOutcome: Sendable {
    /// The channel opened; the server stands at `revision`.
    case connected(revision: Int64)
    /// Changes the server sent over the channel were applied, without a request; the store
    /// now stands at `revision`.
    case applied(SyncSummary, revision: Int64)
    /// A sync ran (the server said something changed that it did not send, or local writes
    /// went out); the store now stands at `revision`.
    case synced(SyncSummary, revision: Int64)
    /// A sync failed. Live mode goes on: the sync is tried again after a backoff (as a failed
    /// channel is opened again; after ``LiveOptions/maxBackoff`` when the error is not
    /// retryable), and the next event or write tries again too.
    case syncFailed(SyncError)
    /// The channel closed or failed (`error` nil: the server ended it, as each connection's
    /// lifetime ends); it opens again after `retryIn`.
    case disconnected(error: String?, retryIn: Duration)
}
