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
    }

    public nonisolated(nonsending) func reply(client: String, request: String) async throws -> StoredReplyRow? {
        let rows = try await run(
            "SELECT \"response\", \"digest\" FROM \(named("__fm_replies")) WHERE \"client\" = $1 AND \"request\" = $2",
            Self.binds(try Self.storable(client), try Self.storable(request)), prepared: true)
        guard let row = rows.first else { return nil }
        let (bytes, digest) = try row.decode((ByteBuffer, Int64?).self)
        return StoredReplyRow(response: Array(bytes.readableBytesView), digest: digest.map { UInt64(bitPattern: $0) })
    }

    /// One statement: the reply's upsert and the time's pruning as data-modifying `WITH`
    /// parts, and the owner's pruning (when there is an owner) as the statement itself. All
    /// three see the data as it was before the statement, so the owner's replies are counted
    /// among those younger than the time, as they would be after the time's pruning; the
    /// reply just stored is never counted nor removed (its key is excluded).
    public nonisolated(nonsending) func storeReply(_ reply: ReplyToStore, pruning: ReplyPruning) async throws {
        let replies = named("__fm_replies")
        var binds = Self.binds(try Self.storable(reply.client), try Self.storable(reply.request))
        binds.append(ByteBuffer(bytes: reply.response))
        binds.append(try Self.storable(reply.owner))
        binds.append(reply.storedAt)
        binds.append(Int64(bitPattern: reply.digest))
        binds.append(pruning.storedBefore)
        binds.append(try Self.storable(pruning.client))
        var sql = "WITH stored AS (INSERT INTO \(replies) (\"client\", \"request\", \"response\", \"owner\", \"stored\", \"digest\") "
            + "VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (\"client\") DO UPDATE SET \"request\" = EXCLUDED.\"request\", "
            + "\"response\" = EXCLUDED.\"response\", \"owner\" = EXCLUDED.\"owner\", \"stored\" = EXCLUDED.\"stored\", "
            + "\"digest\" = EXCLUDED.\"digest\" RETURNING 1) "
        let expired = "DELETE FROM \(replies) WHERE \"stored\" < $7 AND \"client\" <> $8"
        if pruning.owner.isEmpty {
            sql += expired
        } else {
            binds.append(try Self.storable(pruning.owner))
            binds.append(Int64(pruning.keeping - 1))
            sql += ", expired AS (\(expired) RETURNING 1) "
                + "DELETE FROM \(replies) WHERE \"client\" IN (SELECT \"client\" FROM \(replies) "
                + "WHERE \"owner\" = $9 AND \"client\" <> $8 AND \"stored\" >= $7 "
                + "ORDER BY \"stored\" DESC, \"client\" COLLATE \"C\" DESC OFFSET $10)"
        }
        try await run(sql, binds, prepared: true)
    }
}
