import FieldMerge
import FieldMergeServer
import PostgresNIO

/// How the write transactions of every server on one PostgreSQL data set are ordered
/// (Specs/http.md §8, "How writes are ordered" and "Writes in parallel").
public enum PostgresWriteOrder: String, Sendable, CaseIterable {
    /// Each write transaction locks the data set's state row first and holds it to its
    /// commit: writes run one after another, revisions have no gaps.
    case locked
    /// Each write takes its revisions and ids before its transaction begins, in a statement
    /// of its own that registers them as in flight; the transactions then run beside each
    /// other, lock only the records they change, and commit in any order. Catch-ups stop
    /// below the smallest revision still in flight (the watermark), so that none skips a
    /// revision that commits after it. A revision whose write rolls back is a gap. The default.
    case parallel
}

extension PostgresServerStorage {
    /// The state row that says a data set's writes run in parallel (value 1), once a server
    /// with ``PostgresWriteOrder/parallel`` has opened it; servers that lock refuse it then.
    static let writeOrderKey = "writeOrder"

    /// How the writes of the data set in `schema` (the URL's when nil) are ordered, as its
    /// state says: ``PostgresWriteOrder/parallel`` once a server that writes in parallel has
    /// opened it, else (or when there is no data set there yet) ``PostgresWriteOrder/locked``.
    /// For tools that open a data set beside its servers (an export, a compaction).
    public static func recordedOrder(_ connector: PostgresConnector, schema: String? = nil) async throws -> PostgresWriteOrder {
        let storage = try PostgresServerStorage(connector, schema: schema, order: .locked)
        return try await storage.read { () async throws -> PostgresWriteOrder in
            guard try await storage.scalar("SELECT to_regclass($1)::TEXT", Self.binds(storage.named("__fm_server")), as: String.self) != nil
            else { return .locked }
            let value = try await storage.scalar(
                "SELECT \"value\" FROM \(storage.named("__fm_server")) WHERE \"key\" = $1", Self.binds(Self.writeOrderKey), as: Int64.self)
            return value == 1 ? .parallel : .locked
        }
    }

    static func orderMismatch(_ schema: String) -> ServerError {
        ServerError(
            .schemaMismatch,
            "the data set in PostgreSQL schema \(schema) runs its writes in parallel (opened by a server with --postgres-order parallel): "
                + "restart this server with --postgres-order parallel")
    }

    /// The revision below every one in flight: the smallest in flight minus one, or the last
    /// taken when none is (one value, for a `SELECT` list).
    var watermarkQuery: String {
        "coalesce((SELECT min(\"revision\") FROM \(named("__fm_inflight"))) - 1, "
            + "(SELECT \"value\" FROM \(named("__fm_server")) WHERE \"key\" = 'maxRevision'))"
    }

    /// In ``open(schema:)``, with writes in parallel: the table of revisions in flight, a
    /// counter row for every entity (ids are taken without reading the tables) and the state
    /// row that tells servers that lock to stay away.
    nonisolated(nonsending) func prepareParallelWrites() async throws {
        guard order == .parallel else { return }
        try await run(
            "CREATE TABLE IF NOT EXISTS \(named("__fm_inflight")) (\"revision\" BIGINT PRIMARY KEY, \"pid\" INTEGER NOT NULL, "
                + "\"started\" TIMESTAMPTZ, \"at\" TIMESTAMPTZ NOT NULL)")
        let marked = try await scalar(
            "SELECT \"value\" FROM \(named("__fm_server")) WHERE \"key\" = $1", Self.binds(Self.writeOrderKey), as: Int64.self) == 1
        // A data set that servers which lock have written until now: the state rows first, so
        // that a write of theirs in progress (which read no mark under that lock) ends before
        // the counters are read and the mark is there; every later one reads it and refuses.
        if !marked { try await run("SELECT 1 FROM \(named("__fm_server")) FOR UPDATE") }
        for table in tables {
            try await run(
                "INSERT INTO \(named("__fm_ids")) (\"entity\", \"next\") SELECT $1, GREATEST((SELECT coalesce(max(\"id\"), 0) FROM \(table.table)), "
                    + "(SELECT coalesce(max(\"id\"), 0) FROM \(named("__fm_deleted")) WHERE \"entity\" = $1)) + 1 ON CONFLICT (\"entity\") DO NOTHING",
                Self.binds(table.entity.name))
        }
        guard !marked else { return }
        try await run(
            "INSERT INTO \(named("__fm_server")) (\"key\", \"value\") VALUES ($1, 1) ON CONFLICT (\"key\") DO UPDATE SET \"value\" = 1",
            Self.binds(Self.writeOrderKey))
    }

    public nonisolated(nonsending) func write<T>(reserving reservation: WriteReservation, _ body: nonisolated(nonsending) () async throws -> T) async throws -> T {
        guard order == .parallel else { return try await write(body) }
        var attempt = 1
        while true {
            do {
                return try await transaction(
                    "BEGIN ISOLATION LEVEL READ COMMITTED", prologue: { try await self.reserve(reservation) }, undo: { try await self.release() }
                ) {
                    try await readWatermark(lockingRepliesOf: reservation.replyKeys)
                    let result = try await body()
                    try await finishReserved()
                    return result
                }
            } catch {
                guard attempt < Self.maxAttempts, Self.isTransient(error) || Self.isBrokenReference(error) || Self.isWrittenAfter(error) else { throw error }
                attempt += 1
                retriedTransactions += 1
                try await Task.sleep(for: .milliseconds(Int.random(in: 5...25) * attempt))
            }
        }
    }

    /// Before `BEGIN`, in one statement that commits at once: takes the write's revisions
    /// from the state row (locked for this statement only, so that revisions are taken in
    /// order) and registers them in flight with this backend's process id and start time;
    /// takes its ids; moves the stored clock to at least the server's; and removes revisions
    /// in flight whose backend is gone (a server killed mid-write), announcing that the
    /// watermark moved.
    private nonisolated(nonsending) func reserve(_ reservation: WriteReservation) async throws {
        let (server, inflight) = (named("__fm_server"), named("__fm_inflight"))
        let counts = reservation.ids.filter { $0.value > 0 }.sorted { $0.key < $1.key }
        var binds = Self.binds(Int64(reservation.revisions), Int64(bitPattern: reservation.clock))
        binds.append(counts.map { tables[$0.key].entity.name })
        binds.append(counts.map { Int64($0.value) })
        binds.append(liveChannel)
        binds.append(reapAfterSeconds)
        binds.append(quickReapSeconds)
        let sql =
            "WITH reaped AS (\(reapQuery(after: "$6", quick: "$7"))), "
            + "moved AS (UPDATE \(server) SET \"value\" = \"value\" + $1 WHERE \"key\" = 'maxRevision' RETURNING \"value\"), "
            + "clock AS (UPDATE \(server) SET \"value\" = GREATEST(\"value\", $2) WHERE \"key\" = 'clock' RETURNING \"value\"), "
            + "ids AS (UPDATE \(named("__fm_ids")) AS i SET \"next\" = i.\"next\" + u.\"count\" FROM unnest($3::TEXT[], $4::BIGINT[]) AS u(\"entity\", \"count\") "
            + "WHERE i.\"entity\" = u.\"entity\" RETURNING i.\"entity\", i.\"next\" - u.\"count\" AS \"first\"), "
            + "taken AS (INSERT INTO \(inflight) (\"revision\", \"pid\", \"started\", \"at\") SELECT m.\"value\" - $1 + g, pg_backend_pid(), "
            + "(SELECT backend_start FROM pg_stat_get_activity(pg_backend_pid())), clock_timestamp() FROM moved m, generate_series(1, $1) g RETURNING 1), "
            + "told AS (SELECT pg_notify($5, (SELECT \"value\" FROM moved)::TEXT) FROM (SELECT 1 FROM reaped LIMIT 1) r) "
            + "SELECT (SELECT \"value\" FROM moved) - $1, (SELECT \"value\" FROM clock), "
            + "coalesce((SELECT \"value\" FROM \(server) WHERE \"key\" = 'schemaVersion'), 1), coalesce((SELECT \"value\" FROM \(server) WHERE \"key\" = 'horizon'), 0), "
            + "(SELECT array_agg(\"entity\") FROM ids), (SELECT array_agg(\"first\") FROM ids), (SELECT count(*) FROM taken), (SELECT count(*) FROM told)"
        guard let row = try await run(sql, binds, prepared: true).first else { throw ServerError(.corrupt, "no revisions could be taken") }
        let (base, clock, version, horizon, entities, firsts, taken, _) = try row.decode((Int64?, Int64?, Int64, Int64, [String]?, [Int64]?, Int64, Int64).self)
        guard let base, let clock, taken == Int64(reservation.revisions) else {
            throw ServerError(.corrupt, "the server's state (\(server)) is damaged: no revision to take")
        }
        let session = session
        session.reserved = (base, Int64(reservation.revisions))
        if let openedVersion, version != openedVersion {
            throw ServerError(
                .schemaMismatch,
                "the data set in PostgreSQL schema \(schemaName) moved to schema version \(version) after this server opened it "
                    + "with version \(openedVersion): restart this server with the new schema")
        }
        session.idPool = [:]
        for (name, first) in zip(entities ?? [], firsts ?? []) {
            guard let position = tables.firstIndex(where: { $0.entity.name == name }) else { continue }
            session.idPool[position] = (first, first + Int64(reservation.ids[position] ?? 0))
        }
        session.lockedState = ServerState(maxRevision: base, clock: UInt64(bitPattern: clock), horizon: horizon)
    }

    /// The `DELETE` of revisions in flight whose backend is gone, or idle (outside any
    /// transaction, so no longer writing them) for longer than the seconds bound at `after`;
    /// rows younger than the seconds at `quick` are left alone (a write between taking its
    /// revisions and its `BEGIN` is idle for a moment).
    /// The backends are read once, from the function behind the `pg_stat_activity` view
    /// (`pg_stat_get_activity(NULL)`): the view's joins cost every reservation half a
    /// millisecond of planning, and a call per row (`pg_stat_get_activity(pid)`) a read of
    /// every backend for each of thousands of revisions a large request holds. With `skipLocked`, rows another reaper is removing at the same moment are
    /// skipped, not waited for: for a write that runs alone, which holds what it reaps to its
    /// commit; the reapers that run all the time keep the plainer statement.
    func reapQuery(after: String, quick: String, skipLocked: Bool = false) -> String {
        let inflight = named("__fm_inflight")
        let dead = "i.\"at\" < clock_timestamp() - interval '1 second' * \(quick) AND NOT EXISTS "
            + "(SELECT 1 FROM pg_stat_get_activity(NULL) a WHERE a.pid = i.\"pid\" AND a.backend_start IS NOT DISTINCT FROM i.\"started\" "
            + "AND (a.state IS DISTINCT FROM 'idle' OR i.\"at\" > clock_timestamp() - interval '1 second' * \(after)))"
        guard skipLocked else { return "DELETE FROM \(inflight) i WHERE \(dead) RETURNING i.\"revision\"" }
        return "DELETE FROM \(inflight) WHERE \"revision\" IN (SELECT i.\"revision\" FROM \(inflight) i WHERE \(dead) "
            + "FOR UPDATE SKIP LOCKED) RETURNING \"revision\""
    }

    /// How old a revision in flight must be before anyone asks whether its backend is gone: a
    /// tenth of a second, or ``reapAfter`` when that is shorter.
    var quickReapSeconds: Double { min(0.1, reapAfterSeconds) }

    /// Reaps, in a transaction of its own, the revisions in flight whose backend is gone, and
    /// announces the watermark's move when it removed any.
    nonisolated(nonsending) func reapInFlight() async throws {
        try await transaction("BEGIN") {
            try await run(
                "WITH reaped AS (\(reapQuery(after: "$1", quick: "$3"))) SELECT pg_notify($2, \"value\"::TEXT) FROM \(named("__fm_server")) "
                    + "WHERE \"key\" = 'maxRevision' AND EXISTS (SELECT 1 FROM reaped)",
                Self.binds(reapAfterSeconds, liveChannel, quickReapSeconds), prepared: true)
        }
    }

    /// The transaction's first statement: where its catch-ups must stop, and the locks on the
    /// stored replies of `clients` (``lockReplies(of:)``), in the order of their keys so that two
    /// writes never wait for each other's. Every revision up to the watermark has committed (or
    /// rolled back) before this statement began, so every later statement of the transaction
    /// sees them; when it is below the write's own first revision, other writes below it are
    /// still in flight. (A wait for a lock leaves the watermark older, which is only lower.)
    private nonisolated(nonsending) func readWatermark(lockingRepliesOf clients: [String]) async throws {
        guard let reserved = session.reserved, var state = session.lockedState else { return }
        let keys = Array(Set(clients.map(replyLockKey))).sorted()
        guard let row = try await run(
            "SELECT \(watermarkQuery), (SELECT count(pg_advisory_xact_lock(hashtextextended(k, 0))) FROM (SELECT unnest($1::TEXT[]) AS k ORDER BY 1) s)",
            Self.binds(keys), prepared: true
        ).first, let watermark = try row.decode((Int64?, Int64).self).0 else {
            throw ServerError(.corrupt, "the watermark of \(named("__fm_inflight")) could not be read")
        }
        session.lockedReplies = Set(keys)
        state.visible = watermark < reserved.base ? watermark : nil
        session.lockedState = state
    }

    /// The state a write of the transaction saved, held: nothing of it is written (its
    /// revisions were taken, its clock is stored by the server's next write), but it must lie
    /// within the revisions taken. What may be read stays where the watermark put it.
    func holdState(_ state: ServerState, reserved: (base: Int64, count: Int64)) throws(ServerError) {
        guard state.maxRevision <= reserved.base + reserved.count else {
            throw ServerError(.storage, "a write gave revision \(state.maxRevision), past the \(reserved.count) it took after \(reserved.base)")
        }
        var held = state
        held.visible = session.lockedState?.visible
        session.heldState = held
        session.lockedState = held
    }

    /// The transaction's last statement before `COMMIT`: its revisions leave the table of
    /// those in flight, and, when it gave any, the commit announces the last.
    private nonisolated(nonsending) func finishReserved() async throws {
        guard let reserved = session.reserved else { return }
        let last = session.heldState?.maxRevision ?? reserved.base
        session.heldState = nil
        try await run(
            "WITH done AS (DELETE FROM \(named("__fm_inflight")) WHERE \"revision\" > $1 AND \"revision\" <= $2 RETURNING 1) "
                + "SELECT pg_notify($3, $4::TEXT) WHERE $4 > $1 AND (SELECT count(*) FROM done) >= 0",
            Self.binds(reserved.base, reserved.base + reserved.count, liveChannel, last), prepared: true)
    }

    /// After a rollback: the revisions taken leave the table of those in flight (gaps now),
    /// and the watermark's move is announced.
    private nonisolated(nonsending) func release() async throws {
        guard let reserved = session.reserved else { return }
        session.reserved = nil
        try await run(
            "WITH done AS (DELETE FROM \(named("__fm_inflight")) WHERE \"revision\" > $1 AND \"revision\" <= $2 RETURNING 1) "
                + "SELECT pg_notify($3, $2::TEXT) FROM (SELECT 1 FROM done LIMIT 1) d",
            Self.binds(reserved.base, reserved.base + reserved.count, liveChannel), prepared: true)
    }

    /// A record this write read to change it was written by a write that took a later
    /// revision and committed first: written now with this write's revision, its revision
    /// would go back, and the device of this write, told this revision, would never be sent
    /// the other's change. The write runs again with new revisions.
    struct WrittenAfter: Error {}

    static func isWrittenAfter(_ error: any Error) -> Bool {
        error is WrittenAfter || (error as? ServerError)?.cause is WrittenAfter
    }

    /// Throws ``WrittenAfter`` when `revision`, read from a record or tombstone this write
    /// locked, lies past the revisions it took (its own lie within them).
    func checkNotWrittenAfter(_ revision: Int64) throws {
        if let reserved = session.reserved, revision > reserved.base + reserved.count { throw WrittenAfter() }
    }

    /// Whether the transaction locks the records it reads: a write with writes in parallel,
    /// which no other lock keeps apart from the writes beside it.
    var locksRows: Bool { session.reserved != nil }

    /// `count` ids of `entity` from the block taken before the transaction began; past it (a
    /// count the reservation did not foresee), taken from the counter in this transaction,
    /// which then holds that counter's row to its commit.
    nonisolated(nonsending) func reservedIDs(_ entity: ServerEntity, count: Int) async throws -> [Int64] {
        let session = session
        if let pool = session.idPool[entity.position], pool.end - pool.next >= Int64(count) {
            session.idPool[entity.position] = (pool.next + Int64(count), pool.end)
            return Array(pool.next..<pool.next + Int64(count))
        }
        // A counter that is missing (removed by hand) starts again past the largest id alive or deleted.
        guard let first = try await scalar(
            "INSERT INTO \(named("__fm_ids")) AS i (\"entity\", \"next\") SELECT $1, GREATEST((SELECT coalesce(max(\"id\"), 0) FROM \(table(entity).table)), "
                + "(SELECT coalesce(max(\"id\"), 0) FROM \(named("__fm_deleted")) WHERE \"entity\" = $1)) + 1 + $2 "
                + "ON CONFLICT (\"entity\") DO UPDATE SET \"next\" = i.\"next\" + $2 RETURNING i.\"next\" - $2",
            Self.binds(entity.name, Int64(count)), prepared: true, as: Int64.self)
        else { throw ServerError(.corrupt, "the id counter of \(entity.name) could not be moved") }
        return Array(first..<first + Int64(count))
    }

    /// With writes in parallel, before a stored reply is looked up: a lock on the client's
    /// replies to the transaction's end, so that a retry reaching another server at the same
    /// time waits, and its lookup (a later statement) sees the reply this one stores.
    nonisolated(nonsending) func lockReplies(of client: String) async throws {
        let key = replyLockKey(client)
        guard locksRows, !session.lockedReplies.contains(key) else { return }
        try await run("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", Self.binds(key), prepared: true)
        session.lockedReplies.insert(key)
    }

    /// The text whose hash names the lock on `client`'s stored replies in this data set.
    func replyLockKey(_ client: String) -> String { "fieldmerge-reply:" + schemaName + ":" + client }
}
