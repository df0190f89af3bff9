/// A phase of a sync round, as a ``SyncProbe`` hears of it (`fieldmerge bench sync` prints
/// them, Specs/benchmarks.md).
///
/// A phase with a ``parent`` runs inside that phase: its time counts in the parent's too.
public enum SyncPhase: String, Sendable, CaseIterable {
    /// The client takes in plain-SQL writes and reads its outbox (the pending changes).
    case clientRead
    /// The client encodes the request as JSON.
    case encode
    /// The client gzips the request.
    case gzip
    /// The server inflates and decodes the request.
    case serverDecode
    /// The server reads the catch-up page (the log and the records it names).
    case catchUp
    /// The server applies the change sets: savepoints, checks, record writes, and the log.
    case serverApply
    /// The server writes its revision log (inside ``serverApply``).
    case log
    /// The server saves its state and stores the reply for a retry.
    case replyStorage
    /// The server commits the request's transaction (SQLite: also its checkpoints).
    case serverCommit
    /// The server encodes the response as JSON.
    case responseEncode
    /// The server gzips the response.
    case responseGzip
    /// The client inflates and decodes the response.
    case clientDecode
    /// The client merges the response with its replica: reading local rows, three-way merges
    /// (inside ``clientApply``).
    case merge
    /// The client's store transaction for the response: the merge, the writes, the commit.
    case clientApply

    /// The phase this one runs inside, if any.
    public var parent: SyncPhase? {
        switch self {
        case .log: return .serverApply
        case .merge: return .clientApply
        default: return nil
        }
    }
}

/// Hears how long each phase of a sync takes: give one to a `SyncClient`, an
/// `InProcessTransport` and a `RevisionServer` (its options) to see where the time goes.
///
/// Absent by default; without one, nothing is timed. A probe is called from the client's
/// and the server's threads, also at the same time (a prefetched page), so it must be
/// thread-safe; it should return quickly (it is called once per record for ``SyncPhase/log``).
public protocol SyncProbe: Sendable {
    /// `phase` took `duration` once (a phase may be reported many times in one round).
    func record(_ phase: SyncPhase, _ duration: Duration)
}

extension Optional where Wrapped == any SyncProbe {
    /// Runs `body`, and reports its time as `phase` when there is a probe.
    @inlinable
    public func measure<T, E: Error>(_ phase: SyncPhase, _ body: () throws(E) -> T) throws(E) -> T {
        guard let probe = self else { return try body() }
        let start = ContinuousClock.now
        defer { probe.record(phase, ContinuousClock.now - start) }
        return try body()
    }

    /// Runs `body` on the caller's actor, and reports its time as `phase` when there is a probe.
    @inlinable
    public func measure<T>(
        _ phase: SyncPhase, isolation: isolated (any Actor)? = #isolation, _ body: () async throws -> T
    ) async rethrows -> T {
        guard let probe = self else { return try await body() }
        let start = ContinuousClock.now
        defer { probe.record(phase, ContinuousClock.now - start) }
        return try await body()
    }
}
