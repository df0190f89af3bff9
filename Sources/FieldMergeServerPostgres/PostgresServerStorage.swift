import FieldMerge
import FieldMergeServer
import PostgresNIO

/// `ServerStorage` on PostgreSQL, so that several server processes can
/// serve one data set.
///
/// The same tables as `SQLiteServerStorage`, in one PostgreSQL schema:
/// one table per entity with typed columns, the field stamps, the revision of the last
/// change, the revision that created the record and the per-field revisions
/// (`__fm_fields`); `__fm_deleted` keeps tombstones, `__fm_log` the latest revision of every
/// record, `__fm_replies` each client's last answer, `__fm_ids` the id counters,
/// `__fm_schema` the schema the data set was made for and `__fm_server` the state (revision
/// and clock). For scopes (`ScopedServerStorage`), every entity table has
/// `__fm_root`, tombstones keep it, `__fm_departed` notes which records left which root and
/// `__fm_scopes` the rules the roots were computed for; once a server with scopes has opened
/// the data set, every table is also indexed by revision.
///
/// How the write transactions of all servers on the data set are ordered is ``order``. By
/// default (``PostgresWriteOrder/parallel``) each request's write, ``write(reserving:_:)``,
/// takes its revisions first and runs beside the others, locking only the records it
/// changes; catch-ups stop below the revisions still in flight. With
/// ``PostgresWriteOrder/locked``, each first locks the state rows (`SELECT ... FOR UPDATE`)
/// and they run one after another, revisions with no gap. ``write(_:)`` (compaction, an
/// import) always locks the state rows, and with writes in parallel waits for those in
/// flight. ``read(_:)`` is one REPEATABLE READ READ ONLY
/// transaction: one committed state, taking no lock. A write that moves the revision announces
/// it on ``liveChannel`` as it commits, so that every server on the data set can tell its live
/// subscribers (``PostgresLiveListener``).
///
/// A storage belongs to one server. Each transaction leases a connection from the
/// ``PostgresConnector``'s pool and keeps its state in the task that runs it
/// (`PostgresTransaction`), so the server may run several at once: its writes one at a
/// time, and reads beside them and beside each other (``readsConcurrently``).
public final class PostgresServerStorage: ServerStorage {
    /// Reads run beside writes and beside each other, each in a transaction of its own on a
    /// connection of its own.
    public var readsConcurrently: Bool { true }
    /// Write requests that queue behind each other share one transaction: one `BEGIN`, lock
    /// and `COMMIT` for the group instead of one each (`RevisionServer.Options.writeGroup`).
    public var groupsWrites: Bool { true }
    /// With writes in parallel, as many write groups at once as the pool has connections but
    /// one (kept for reads and live pages), and at least two; else one.
    public var concurrentWrites: Int { order == .parallel ? max(2, connector.maximumConnections - 1) : 1 }
    /// The event loop of the connector's connections (`PostgresEventLoopExecutor`).
    public var executor: (any ServerExecutor)? { connector.executor }

    let connector: PostgresConnector
    /// How the writes of every server on the data set are ordered (``PostgresWriteOrder``).
    public let order: PostgresWriteOrder
    /// The quoted PostgreSQL schema.
    let schema: String
    let schemaName: String
    /// The NOTIFY channel on which each commit that moves the data set's revision is
    /// announced, with the new revision as its payload, as part of that commit
    /// (``PostgresLiveChannel/name(forSchema:)``; ``PostgresLiveListener`` listens to it).
    public let liveChannel: String
    var tables: [PostgresServerTable] = []
    /// What opening the data set changed to move it to a newer schema version.
    public internal(set) var migrations: [SchemaChange] = []
    /// The older schema versions this data set was migrated from, whose clients it still answers.
    public internal(set) var olderSchemas: [OlderSchema] = []
    /// The schema version the data set had when this storage opened it: a transaction that
    /// finds another (another server process migrated it since) is refused.
    var openedVersion: Int?
    /// The transaction in progress in the calling task (``PostgresTransaction``); outside one,
    /// a fresh empty one whose statements fail and whose changes are dropped.
    var session: PostgresTransaction {
        PostgresTransactions.current[ObjectIdentifier(self)] ?? PostgresTransaction()
    }
    /// Record writes and deletes not sent yet (``PendingRecords``): sent before the next statement.
    var pending: PendingRecords? {
        get { session.pending }
        set { session.pending = newValue }
        _modify { let session = session; yield &session.pending }
    }
    /// The savepoints open now, outermost first: each is sent only when a statement has to go
    /// out inside it (``sendPending()``), after the `held` rows of the run that were written
    /// before it began. A change set that sends nothing (its reads, ids and writes all held
    /// or known) costs no round trip for its savepoint.
    var openSavepoints: [(name: String, held: Int, sent: Bool)] {
        get { session.openSavepoints }
        set { session.openSavepoints = newValue }
        _modify { let session = session; yield &session.openSavepoints }
    }
    /// The id counters this write transaction read, by entity position: handed out here and
    /// written back before the commit (``saveIDCounters()``). Every writer of the data set
    /// holds the state lock first, so nobody else moves them meanwhile.
    var idCounters: [Int: (next: Int64, read: Int64)] {
        get { session.idCounters }
        set { session.idCounters = newValue }
        _modify { let session = session; yield &session.idCounters }
    }
    /// The entities with log entries in a window of revisions, found once per transaction so
    /// that a catch-up asks only those entities for their changes (one round trip instead of
    /// two per entity of the schema). Any write to the log forgets it.
    var windowEntities: (after: Int64, through: Int64, names: [String: Bool])? {
        get { session.windowEntities }
        set { session.windowEntities = newValue; if newValue == nil { session.prefetchedBounds = nil } }
    }
    /// The state the write transaction in progress read when it took the lock, kept up to
    /// date by ``saveState(_:)``.
    var lockedState: ServerState? {
        get { session.lockedState }
        set { session.lockedState = newValue }
    }
    /// How many statements (round trips) the storage has sent: what tests count per request.
    package internal(set) var statementCount = 0
    /// How many of them were sent ahead (``sendAhead(_:_:)``).
    package internal(set) var statementsSentAhead = 0
    /// With writes in parallel: a server killed mid-write leaves its revisions in flight,
    /// holding every catch-up below them, until a write or a read finds their backend gone
    /// (after a tenth of a second) and removes them. A backend still there but idle, outside
    /// any transaction, is taken as done with them after this long: 5 s. A write that takes
    /// longer is left alone as long as its backend works on it.
    public var reapAfter: Duration = .seconds(5)
    var reapAfterSeconds: Double { Double(reapAfter.components.seconds) + Double(reapAfter.components.attoseconds) / 1e18 }
    /// A read found revisions in flight for longer than ``reapAfter``: it reaps them once done.
    var staleInFlight = false
    /// When a read last reaped.
    var lastReap: ContinuousClock.Instant?
    /// How many write transactions ran again after a serialization failure or deadlock.
    package internal(set) var retriedTransactions = 0

    /// A storage in the PostgreSQL schema `schema` (the URL's when nil) of `connector`'s database.
    ///
    /// - Throws: `ServerError/Code/storage` when `schema` is not a plain
    ///   name (``PostgresIdentifier/isPlainName(_:)``).
    public init(_ connector: PostgresConnector, schema: String? = nil, order: PostgresWriteOrder = .parallel) throws(ServerError) {
        let name = schema ?? connector.url.schema
        guard PostgresIdentifier.isPlainName(name) else {
            throw ServerError(.storage, "the PostgreSQL schema name \(name.debugDescription) is not a plain name (\(PostgresIdentifier.plainNameRule))")
        }
        self.connector = connector
        self.order = order
        schemaName = name
        liveChannel = PostgresLiveChannel.name(forSchema: name)
        self.schema = "\"\(name)\""
    }

    func named(_ table: String) -> String { schema + ".\"" + table + "\"" }

    // MARK: Transactions

    /// A write transaction that PostgreSQL ended with a serialization failure or a deadlock
    /// (SQLSTATE 40001, 40P01: it rolled back, having changed nothing) runs again, `body`
    /// included, after a short random wait, up to ``maxAttempts`` times in all; only then
    /// does the error reach the caller, as a storage error the client retries.
    ///
    /// With writes in parallel (``PostgresWriteOrder/parallel``) this is a write that runs
    /// alone (compaction, an import, the roots of new scope rules): holding the state rows,
    /// which every write updates first to take its revisions, it then waits for the writes in
    /// flight to end, and so runs as it would with the lock.
    public nonisolated(nonsending) func write<T>(_ body: nonisolated(nonsending) () async throws -> T) async throws -> T {
        var attempt = 1
        while true {
            do {
                return try await transaction("BEGIN ISOLATION LEVEL READ COMMITTED") {
                    // Every writer of the data set queues here; the lock holds until COMMIT. The
                    // rows it returns are the state that ``state()`` answers in this transaction.
                    lockedState = try state(from: try await run("SELECT \"key\", \"value\" FROM \(named("__fm_server")) FOR UPDATE", prepared: true))
                    if order == .parallel { try await waitForWritesInFlight() }
                    let result = try await body()
                    if let held = session.heldState {
                        session.heldState = nil
                        try await writeState(held)
                    }
                    try await saveIDCounters()
                    return result
                }
            } catch {
                guard attempt < Self.maxAttempts, Self.isTransient(error) else { throw error }
                attempt += 1
                retriedTransactions += 1
                try await Task.sleep(for: .milliseconds(Int.random(in: 5...25) * attempt))
            }
        }
    }

    /// How many times a write transaction runs before a serialization failure or deadlock
    /// reaches the caller.
    public static let maxAttempts = 4

    /// Whether `error` is PostgreSQL ending a transaction that may succeed when run again:
    /// a serialization failure (40001) or a deadlock (40P01).
    static func isTransient(_ error: any Error) -> Bool {
        guard let error = ((error as? ServerError)?.cause ?? error) as? PSQLError, let state = error.serverInfo?[.sqlState] else { return false }
        return state == "40001" || state == "40P01"
    }

    /// Whether `error` is a reference that a write running beside this one broke (23503: a
    /// record created under a parent another write deleted meanwhile): with writes in
    /// parallel, the write runs again and now sees the parent gone.
    static func isBrokenReference(_ error: any Error) -> Bool {
        guard let error = ((error as? ServerError)?.cause ?? error) as? PSQLError else { return false }
        return error.serverInfo?[.sqlState] == "23503"
    }

    public nonisolated(nonsending) func read<T>(_ body: nonisolated(nonsending) () async throws -> T) async throws -> T {
        let result = try await transaction("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY", body)
        // With writes in parallel, a read that found revisions in flight for longer than
        // ``reapAfter`` reaps them (a read only transaction cannot): else readers would wait
        // at the watermark until the next write.
        if staleInFlight {
            staleInFlight = false
            // At most ten times a second: while a long write is in flight, every read finds it.
            if lastReap.map({ ContinuousClock.now - $0 > .milliseconds(100) }) ?? true {
                lastReap = .now
                try? await reapInFlight()
            }
        }
        return result
    }

    /// Runs `body` in a transaction begun by `begin` on a leased connection. What `body`
    /// throws comes out as it is (a conflict, a bad request); failures of the database or
    /// the pool come out as `ServerError/Code/storage`.
    ///
    /// `prologue` runs on the leased connection before `BEGIN` (statements of their own); when
    /// the transaction then fails, `undo` runs after the rollback, on the same connection if
    /// it is still open.
    nonisolated(nonsending) func transaction<T>(
        _ begin: String, prologue: (nonisolated(nonsending) () async throws -> Void)? = nil,
        undo: (nonisolated(nonsending) () async throws -> Void)? = nil, _ body: nonisolated(nonsending) () async throws -> T
    ) async throws -> T {
        let key = ObjectIdentifier(self)
        precondition(PostgresTransactions.current[key] == nil, "a PostgresServerStorage runs one transaction at a time in a task")
        let session = PostgresTransaction()
        var sessions = PostgresTransactions.current
        sessions[key] = session
        do {
            // The transaction's state travels with its task; PostgresNIO's calls run on the
            // loop of the connections (and the server's), not on the shared pool.
            let log = connector.logger
            log.trace("transaction leases a connection", metadata: ["begin": "\(begin)"])
            defer { log.trace("transaction ended") }
            return try await PostgresTransactions.$current.withValue(sessions) { () async throws -> T in
                try await withTaskExecutorPreference(connector.taskExecutor) { () async throws -> T in
                    try await connector.client.withConnection { (leased: PostgresConnection) async throws -> T in
                        log.trace("transaction leased a connection", metadata: ["connection": "\(leased.id)"])
                        defer { log.trace("transaction returns its connection", metadata: ["connection": "\(leased.id)"]) }
                        session.connection = leased
                        let result: T
                        do {
                            if let prologue { try await prologue() }
                            try await run(begin)
                            result = try await body()
                        } catch {
                            try await rollBack(leased, after: error)
                            if let undo, !leased.isClosed { try? await undo() }
                            throw FromBody(error: error)
                        }
                        do { try await run("COMMIT") } catch {
                            try await rollBack(leased, after: error)
                            if let undo, !leased.isClosed { try? await undo() }
                            throw error
                        }
                        return result
                    }
                }
            }
        } catch let error as FromBody {
            throw error.error
        } catch {
            throw PostgresConnector.failure(error, doing: "PostgreSQL (\(connector.url.host):\(connector.url.port)/\(connector.url.database)) failed")
        }
    }

    /// An error `body` threw, kept apart from the database's own.
    private struct FromBody: Error { var error: any Error }

    /// Ends the transaction after `error`; a connection that cannot is closed, so the pool
    /// never hands out one still inside a transaction. A connection that is lost or being
    /// closed gets no ROLLBACK (the server ended the transaction with it): a query written to
    /// it may never be answered.
    private nonisolated(nonsending) func rollBack(_ leased: PostgresConnection, after error: any Error) async throws {
        guard !leased.isClosed else { return await drainAhead() }
        guard !Self.losesTheConnection(error) else {
            try? await leased.close()
            return await drainAhead()
        }
        await drainAhead()
        (pending, openSavepoints) = (nil, [])
        do { try await run("ROLLBACK") } catch { try? await leased.close() }
    }

    /// Whether `error` means the connection is gone: closed, broken, or ended by the server
    /// (a FATAL error, such as an administrator's termination or a shutdown).
    static func losesTheConnection(_ error: any Error) -> Bool {
        guard let error = ((error as? ServerError)?.cause ?? error) as? PSQLError else { return false }
        if [.serverClosedConnection, .clientClosedConnection, .connectionError, .uncleanShutdown].contains(error.code) { return true }
        return error.serverInfo?[.severity] == "FATAL" || error.serverInfo?[.severity] == "PANIC"
    }

    /// Begins a savepoint that is sent only if a statement goes out before it ends. When the
    /// body throws, a savepoint sent is rolled back (with the rows held since), and one never
    /// sent drops the rows written since it began, unsent; the id counters go back to where
    /// they stood.
    public nonisolated(nonsending) func savepoint<T>(_ body: nonisolated(nonsending) () async throws -> T) async throws -> T {
        let session = session
        session.savepoints += 1
        let name = "\"fm_change_set_\(session.savepoints)\""
        defer { session.savepoints -= 1 }
        let counters = (idCounters, session.idPool)
        let states = (session.lockedState, session.heldState)
        let level = openSavepoints.count
        openSavepoints.append((name, pending?.rows.count ?? 0, false))
        do {
            let result = try await body()
            let sent = openSavepoints[level].sent
            openSavepoints.removeSubrange(level...)
            // The rows it wrote that are still held stay held: released, its work is the
            // transaction's, and they go out with the next statement that needs them (the
            // reply's, usually) instead of one of their own now.
            // Sent ahead: nothing waits for it, and a failure still fails the next statement.
            if sent { try sendAhead("RELEASE SAVEPOINT \(name)", PostgresBindings()) }
            return result
        } catch {
            let (held, sent) = (openSavepoints[level].held, openSavepoints[level].sent)
            openSavepoints.removeSubrange(level...)
            (idCounters, session.idPool) = counters
            (session.lockedState, session.heldState) = states
            if sent {
                pending = nil  // written after the savepoint was sent: rolled back unsent
                _ = try? await run("ROLLBACK TO SAVEPOINT \(name)")
                _ = try? await run("RELEASE SAVEPOINT \(name)")
            } else {
                pending?.keep(first: held)
                if pending?.rows.isEmpty == true { pending = nil }
            }
            throw error
        }
    }

    /// Runs `sql` with `binds` on the transaction's connection and collects its rows; the
    /// record writes pending (``PendingRecords``) go first.
    @discardableResult
    ///
    /// `prepared`: the connection keeps `sql` prepared (``PostgresPreparedStatements``), for
    /// a text fixed per data set whose parameters always have the same types and whose
    /// result columns never change; `types` tells the parameters' types apart when they vary
    /// between calls (each kind is prepared of its own).
    nonisolated(nonsending) func run(_ sql: String, _ binds: PostgresBindings = PostgresBindings(), prepared: Bool = false) async throws -> [PostgresRow] {
        try await sendPending()
        return try await send(sql, binds, prepared: prepared)
    }

    /// Runs `sql` as ``run(_:_:prepared:)`` does, without sending what is pending first.
    @discardableResult
    nonisolated(nonsending) func send(_ sql: String, _ binds: PostgresBindings, prepared: Bool = false, types: String = "") async throws -> [PostgresRow] {
        guard let connection = session.connection else { throw ServerError(.storage, "PostgreSQL: a storage call outside a transaction") }
        try await awaitAhead()
        // A query written to a closed connection may never be answered (nor failed).
        guard !connection.isClosed else { throw ServerError(.storage, "PostgreSQL: the connection was closed") }
        statementCount += 1
        let statements = connector.statements
        let name = prepared ? statements.name(for: sql, types: types, on: connection.id) : nil
        do {
            if let name {
                return try await PostgresNamedStatement.$current.withValue(.init(name: name, sql: sql)) {
                    var rows: [PostgresRow] = []
                    for try await row in try await connection.execute(PostgresNamedStatement(bindings: binds), logger: connector.logger) {
                        rows.append(row)
                    }
                    return rows
                }
            }
            var rows: [PostgresRow] = []
            for try await row in try await connection.query(PostgresQuery(unsafeSQL: sql, binds: binds), logger: connector.logger) {
                rows.append(row)
            }
            return rows
        } catch {
            // A failed preparation stays failed on the connection (PostgresNIO keeps it):
            // after any failure, the text runs unnamed there.
            if let name { statements.avoid(name, on: connection.id) }
            throw PostgresConnector.failure(error, doing: "PostgreSQL failed")
        }
    }

    /// The first column of the first row of `sql`, or nil (no row, or NULL).
    nonisolated(nonsending) func scalar<V: PostgresDecodable>(
        _ sql: String, _ binds: PostgresBindings = PostgresBindings(), prepared: Bool = false, as type: V.Type
    ) async throws -> V? {
        guard let cell = try await run(sql, binds, prepared: prepared).first?.first, cell.bytes != nil else { return nil }
        return try Self.decode(cell, as: V.self)
    }

    static func decode<V: PostgresDecodable>(_ cell: PostgresCell, as type: V.Type) throws(ServerError) -> V {
        do { return try cell.decode(V.self) } catch {
            throw ServerError(.corrupt, "column \(cell.columnName) does not hold a \(V.self)", cause: error)
        }
    }

    // MARK: State, ids, replies

    public nonisolated(nonsending) func state() async throws -> ServerState {
        if let lockedState { return lockedState }
        // With writes in parallel, a read's revision is the watermark: below every revision
        // still in flight, read in the transaction's one snapshot with the rest.
        guard order == .parallel else {
            return try state(from: try await run("SELECT \"key\", \"value\" FROM \(named("__fm_server"))", prepared: true))
        }
        return try state(from: try await run(
            "SELECT \"key\", \"value\" FROM \(named("__fm_server")) UNION ALL SELECT 'watermark', \(watermarkQuery) "
                + "UNION ALL SELECT 'stale', count(*) FROM \(named("__fm_inflight")) WHERE \"at\" < clock_timestamp() - interval '1 second' * $1",
            Self.binds(quickReapSeconds), prepared: true))
    }

    /// The state in the rows of `__fm_server`; refuses a data set another server process
    /// migrated since this one opened it.
    func state(from rows: [PostgresRow]) throws -> ServerState {
        var revision: Int64?, clock: Int64?, version: Int64 = 1, horizon: Int64 = 0, watermark: Int64?, parallel = false
        for row in rows {
            let (key, value) = try row.decode((String, Int64).self)
            switch key {
            case "maxRevision": revision = value
            case "clock": clock = value
            case "schemaVersion": version = value
            case "horizon": horizon = value
            case "watermark": watermark = value
            case "stale": staleInFlight = staleInFlight || value > 0
            case Self.writeOrderKey: parallel = value == 1
            default: break
            }
        }
        guard let revision, let clock else { throw ServerError(.corrupt, "the server's state (\(named("__fm_server"))) is damaged") }
        if parallel && order == .locked { throw Self.orderMismatch(schemaName) }
        if let openedVersion, version != openedVersion {
            throw ServerError(
                .schemaMismatch,
                "the data set in PostgreSQL schema \(schemaName) moved to schema version \(version) after this server opened it "
                    + "with version \(openedVersion): restart this server with the new schema")
        }
        return ServerState(maxRevision: watermark.map { min($0, revision) } ?? revision, clock: UInt64(bitPattern: clock), horizon: horizon)
    }

    /// Saves the state. In a write transaction the state is held and written once before the
    /// commit, whatever number of requests saved theirs in it (a group,
    /// `RevisionServer.Options.writeGroup`); ``state()`` answers it meanwhile, and a
    /// savepoint rolled back restores what was held before it.
    public nonisolated(nonsending) func saveState(_ state: ServerState) async throws {
        // The request's writes are done: a large run still held goes ahead now, inserted
        // while the server encodes the reply, not in the reply's statement after it.
        if let held = session.pending, held.rows.count >= PendingRecords.aheadRun / 2 { try await sendPending(ahead: true) }
        if let reserved = session.reserved { return try holdState(state, reserved: reserved) }
        guard lockedState != nil else { return try await writeState(state) }
        session.heldState = state
        lockedState = state
    }

    /// Writes the state and, in the same statement, announces the revision on
    /// ``liveChannel``: PostgreSQL delivers the notification when the transaction commits,
    /// and never if it rolls back. The id counters the transaction moved are written by the
    /// same statement (its requests have given their ids by now), unless a savepoint is open.
    nonisolated(nonsending) func writeState(_ state: ServerState) async throws {
        try await sendPending()
        var binds = Self.binds(state.maxRevision, Int64(bitPattern: state.clock), liveChannel)
        var ids = ""
        if openSavepoints.isEmpty, let moved = takeMovedIDCounters() {
            binds.append(moved.entities)
            binds.append(moved.next)
            ids = "ids AS (\(idCountersUpsert(entities: "$4", next: "$5")) RETURNING 1), "
        }
        try await send(
            "WITH \(ids)saved AS (UPDATE \(named("__fm_server")) SET \"value\" = CASE \"key\" WHEN 'maxRevision' THEN $1::BIGINT ELSE $2::BIGINT END "
                + "WHERE \"key\" IN ('maxRevision', 'clock') RETURNING \"key\", \"value\") "
                + "SELECT pg_notify($3, \"value\"::TEXT) FROM saved WHERE \"key\" = 'maxRevision'",
            binds, prepared: true)
        if lockedState != nil { lockedState = state }
    }

    public nonisolated(nonsending) func nextID(_ entity: ServerEntity) async throws -> Int64 {
        try await nextIDs(entity, count: 1)[0]
    }

    func table(_ entity: ServerEntity) -> PostgresServerTable { tables[entity.position] }

    /// Bind parameters of plain values, in order.
    static func binds(_ values: any PostgresDynamicTypeEncodable...) -> PostgresBindings { binds(values) }

    static func binds(_ values: [any PostgresDynamicTypeEncodable]) -> PostgresBindings {
        var binds = PostgresBindings(capacity: values.count)
        for value in values { binds.append(value) }
        return binds
    }
}
