import FieldMergeServer
import Logging
import PostgresNIO
import Synchronization

/// Tells a server's live subscribers of the commits that other server processes make on the
/// same data set in PostgreSQL (Specs/live.md): it listens on the data set's channel
/// (``PostgresServerStorage/liveChannel``), on a connection of its own outside the pool, and
/// hands each announced revision to the hub (`LiveHub/advance(to:)`), which
/// reads the changes through its own server.
///
/// Each time it connects, once it listens, it also reads the data set's revision and hands it
/// over, so that a commit announced while it was not connected is not lost. A lost connection
/// is logged (notice) and made again after a wait of ``Options/firstDelay``, doubling up to
/// ``Options/maxDelay``, each drawn at random between half of it and all of it; until
/// ``shutdown()``. A connection that stops answering (lost without a reset) is found by a
/// heartbeat (``Options/heartbeat``) and made again. It also hears its own server's commits,
/// which the hub already knows of (handing them over again changes nothing).
///
/// It runs in a task of its own from its `init` until ``shutdown()``.
public final class PostgresLiveListener: Sendable {
    /// How the listener connects and waits.
    public struct Options: Sendable {
        /// How its connection names itself to PostgreSQL (`application_name` in
        /// `pg_stat_activity`). `fieldmerge-live` by default.
        public var applicationName = "fieldmerge-live"
        /// The wait before the first attempt to connect again after a failure. 0.5 s.
        public var firstDelay: Duration = .milliseconds(500)
        /// The longest wait between two attempts. 10 s.
        public var maxDelay: Duration = .seconds(10)
        /// How often the listener reads the data set's revision on its listening connection
        /// (and hands it over, so a notification lost on the way is caught up too). 30 s.
        public var heartbeat: Duration = .seconds(30)
        /// How long that read may take: a connection that does not answer in time is closed
        /// and made again. So a connection lost without a word (a peer that vanished, a NAT
        /// or firewall that forgot it) is noticed within `heartbeat + heartbeatTimeout`,
        /// not when TCP gives up, minutes or hours later. 10 s.
        public var heartbeatTimeout: Duration = .seconds(10)
        /// Where it logs; the connector's logger when nil.
        public var logger: Logger?

        public init() {}
    }

    private let runner: Task<Void, Never>

    /// Starts listening for `source`'s data set on behalf of `hub` (the
    /// `RevisionServer/live` of a server on that data set).
    public convenience init(_ source: PostgresLiveSource, hub: LiveHub, options: Options = Options()) {
        self.init(source, options: options) { revision in hub.advance(to: revision) }
    }

    /// Starts listening for `source`'s data set, calling `onRevision` with each revision
    /// announced, with the data set's revision on each connection and at each heartbeat; one
    /// call at a time. A revision may come more than once, and one read as a
    /// connection starts may come before an older one announced just then: the largest seen
    /// is the data set's.
    ///
    /// - Parameters:
    ///   - source: The data set (``PostgresServerStorage/liveSource``).
    ///   - options: How it connects and waits.
    ///   - onRevision: Called with each revision; it must not block.
    public init(_ source: PostgresLiveSource, options: Options = Options(), onRevision: @escaping @Sendable (Int64) -> Void) {
        let gate = Mutex(())
        let session = PostgresLiveSession(
            source: source, applicationName: options.applicationName, logger: options.logger ?? source.connector.logger,
            heartbeat: (options.heartbeat, options.heartbeatTimeout),
            deliver: { revision in gate.withLock { _ in onRevision(revision) } })
        let (first, most) = (options.firstDelay, options.maxDelay)
        runner = Task { await session.run(firstDelay: first, maxDelay: most) }
    }

    /// Stops listening and closes the connection; returns once it is closed.
    public func shutdown() async {
        runner.cancel()
        await runner.value
    }
}
