import FieldMerge
import FieldMergeServer
import PostgresNIO

/// Stored replies on PostgreSQL, as on SQLite: `__fm_replies` keeps each client's last answer
/// with its owner, the time it was stored and the digest of its request's change sets; pruned
/// by age and by count per owner after each reply stored. Every value is a bound parameter.
extension PostgresServerStorage {
    /// Gives a `__fm_replies` made before owners, times and digests those columns (its replies
    /// count as stored now, anonymous, without digest), and the indexes pruning uses. Inside
    /// ``open(schema:)``'s transaction, under its advisory lock; the catalog is read first, so
    /// a data set that has them takes no lock on the table.
    nonisolated(nonsending) func prepareReplies() async throws {
        let columns = try await scalar(
            "SELECT count(*) FROM information_schema.columns WHERE table_schema = $1 AND table_name = $2 AND column_name = $3",
            Self.binds(schemaName, "__fm_replies", "digest"), as: Int64.self)
        if columns == 0 {
            let replies = named("__fm_replies")
            try await run("ALTER TABLE \(replies) ADD COLUMN IF NOT EXISTS \"owner\" TEXT NOT NULL DEFAULT ''")
            try await run("ALTER TABLE \(replies) ADD COLUMN IF NOT EXISTS \"stored\" BIGINT NOT NULL DEFAULT 0")
            try await run("ALTER TABLE \(replies) ADD COLUMN IF NOT EXISTS \"digest\" BIGINT")
            try await run("UPDATE \(replies) SET \"stored\" = (extract(epoch FROM clock_timestamp()) * 1000)::BIGINT")
        }
        let indexes = try await scalar(
            "SELECT count(*) FROM pg_indexes WHERE schemaname = $1 AND indexname IN ('__fm_replies_stored', '__fm_replies_owner')",
            Self.binds(schemaName), as: Int64.self)
        if indexes != 2 {
            try await run("CREATE INDEX IF NOT EXISTS \"__fm_replies_stored\" ON \(named("__fm_replies")) (\"stored\")")
            try await run(
                "CREATE INDEX IF NOT EXISTS \"__fm_replies_owner\" ON \(named("__fm_replies")) (\"owner\", \"stored\", \"client\")")
        }
        try await compressRepliesWithLZ4()
    }

    /// Stores the replies compressed with lz4 instead of PostgreSQL's own pglz, where the
    /// server has it (PostgreSQL 14 and later, built with lz4): the reply of a change set of
    /// 10,000 records (1.3 MB of JSON) costs 1.5 ms to compress instead of 6.4, on the path
    /// of every large write's commit. Once per data set (the column remembers it); where the
    /// server cannot, the savepoint takes the attempt back and replies stay as they were.
    private nonisolated(nonsending) func compressRepliesWithLZ4() async throws {
        let replies = named("__fm_replies")
        _ = try? await savepoint { () async throws in
            let method = try await scalar(
                "SELECT attcompression::TEXT FROM pg_attribute WHERE attrelid = $1::regclass AND attname = 'response'",
                Self.binds(replies), as: String.self)
            if method != "l" { try await run("ALTER TABLE \(replies) ALTER COLUMN \"response\" SET COMPRESSION lz4") }
        }
    }

    public nonisolated(nonsending) func reply(client: String, request: String) async throws -> StoredReplyRow? {
        try await lockReplies(of: client)
        let rows = try await run(
            "SELECT \"response\", \"digest\" FROM \(named("__fm_replies")) WHERE \"client\" = $1 AND \"request\" = $2",
            Self.binds(try Self.storable(client), try Self.storable(request)), prepared: true)
        guard let row = rows.first else { return nil }
        let (bytes, digest) = try row.decode((ByteBuffer, Int64?).self)
        return StoredReplyRow(response: Array(bytes.readableBytesView), digest: digest.map { UInt64(bitPattern: $0) })
    }

    /// The reply and the log's bounds of the catch-up after it in one statement: a retry
    /// (a reply found) does not use the bounds; otherwise ``logBounds(after:limit:latest:)``
    /// answers them for that window, unless something was written in between.
    public nonisolated(nonsending) func reply(client: String, request: String, before catchUp: CatchUpWindow) async throws -> StoredReplyRow? {
        try await lockReplies(of: client)
        var binds = Self.binds(catchUp.after, Int64(catchUp.limit - 1), Int64(catchUp.limit), catchUp.latest)
        binds.append(try Self.storable(client))
        binds.append(try Self.storable(request))
        let sql = logBoundsQuery(
            parts: ", r AS (SELECT \"response\", \"digest\" FROM \(named("__fm_replies")) WHERE \"client\" = $5 AND \"request\" = $6)",
            extra: ", (SELECT \"response\" FROM r), (SELECT \"digest\" FROM r)")
        guard let row = try await run(sql, binds, prepared: true).first else {
            throw ServerError(.corrupt, "the log's bounds could not be read")
        }
        let bounds = try logBounds(row, catchUp)
        let columns = row.makeRandomAccess()
        let (bytes, digest): (ByteBuffer?, Int64?)
        do {
            (bytes, digest) = (try columns[6].decode(ByteBuffer?.self), try columns[7].decode(Int64?.self))
        } catch {
            throw ServerError(.corrupt, "the stored reply could not be read", cause: error)
        }
        guard let bytes else {
            session.prefetchedBounds = (catchUp, bounds)
            return nil
        }
        return StoredReplyRow(response: Array(bytes.readableBytesView), digest: digest.map { UInt64(bitPattern: $0) })
    }

    /// One statement: the reply's upsert and the time's pruning as data-modifying `WITH`
    /// parts, and the owner's pruning (when there is an owner) as the statement itself. All
    /// three see the data as it was before the statement, so the owner's replies are counted
    /// among those younger than the time, as they would be after the time's pruning; the
    /// reply just stored is never counted nor removed (its key is excluded).
    ///
    /// Record writes still held (the request's own, usually) go first in the same statement,
    /// as `WITH` parts of their own (`takeLeadingRows()`): one round trip for the rows, their
    /// log entries and the reply. They touch other tables than the reply's parts, so that
    /// each part sees the same data as when sent alone.
    public nonisolated(nonsending) func storeReply(_ reply: ReplyToStore, pruning: ReplyPruning) async throws {
        let leading = try takeLeadingRows()
        if leading == nil { try await sendPending() }
        var binds = leading?.binds ?? PostgresBindings()
        let first = binds.count + 1
        binds.append(try Self.storable(reply.client))
        binds.append(try Self.storable(reply.request))
        binds.append(ByteBuffer(bytes: reply.response))
        binds.append(try Self.storable(reply.owner))
        binds.append(reply.storedAt)
        binds.append(Int64(bitPattern: reply.digest))
        binds.append(pruning.storedBefore)
        binds.append(try Self.storable(pruning.client))
        if !pruning.owner.isEmpty {
            binds.append(try Self.storable(pruning.owner))
            binds.append(Int64(pruning.keeping - 1))
        }
        let parts = replyParts(first: first, owner: !pruning.owner.isEmpty)
        if let leading {
            try await send(
                leading.sql + ", " + parts, binds, prepared: leading.prepared,
                types: leading.types + (pruning.owner.isEmpty ? "|r" : "|ro"))
        } else {
            try await send("WITH " + parts, binds, prepared: true)
        }
    }

    /// The reply's parts of the statement, after `WITH `: its parameters numbered from
    /// `$first` (client, request, response, owner, time stored, digest, the time pruned
    /// before, the client kept; then, with `owner`, the owner and how many of its other
    /// replies stay).
    private func replyParts(first: Int, owner: Bool) -> String {
        let p = (first..<(first + 10)).map { "$\($0)" }
        let replies = named("__fm_replies")
        let stored = "stored AS (INSERT INTO \(replies) (\"client\", \"request\", \"response\", \"owner\", \"stored\", \"digest\") "
            + "VALUES (\(p[0]), \(p[1]), \(p[2]), \(p[3]), \(p[4]), \(p[5])) ON CONFLICT (\"client\") DO UPDATE SET \"request\" = EXCLUDED.\"request\", "
            + "\"response\" = EXCLUDED.\"response\", \"owner\" = EXCLUDED.\"owner\", \"stored\" = EXCLUDED.\"stored\", "
            + "\"digest\" = EXCLUDED.\"digest\" RETURNING 1) "
        let expired = "DELETE FROM \(replies) WHERE \"stored\" < \(p[6]) AND \"client\" <> \(p[7])"
        guard owner else { return stored + expired }
        return stored + ", expired AS (\(expired) RETURNING 1) "
            + "DELETE FROM \(replies) WHERE \"client\" IN (SELECT \"client\" FROM \(replies) "
            + "WHERE \"owner\" = \(p[8]) AND \"client\" <> \(p[7]) AND \"stored\" >= \(p[6]) "
            + "ORDER BY \"stored\" DESC, \"client\" COLLATE \"C\" DESC OFFSET \(p[9]))"
    }
}
