import FieldMerge
import FieldMergeSQLiteDriver
import FieldMergeServer

/// Stored replies on SQLite: `__fm_replies` keeps each client's last answer with its owner,
/// the time it was stored and the digest of its request's change sets; pruned by age and by
/// count per owner after each reply stored.
extension SQLiteServerStorage {
    /// Whether `table` has `column`.
    func hasColumn(_ table: String, _ column: String) throws(SQLiteError) -> Bool {
        try database.rows("SELECT 1 FROM pragma_table_info(?) WHERE name = ?", [.text(table), .text(column)]).count == 1
    }

    /// Gives a `__fm_replies` made before owners, times and digests those columns (its replies
    /// count as stored now, anonymous, without digest), and the indexes pruning uses.
    func prepareReplies() throws(SQLiteError) {
        if try !hasColumn("__fm_replies", "digest") {
            try database.execute("""
                BEGIN IMMEDIATE;
                ALTER TABLE "__fm_replies" ADD COLUMN "owner" TEXT NOT NULL DEFAULT '';
                ALTER TABLE "__fm_replies" ADD COLUMN "stored" INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE "__fm_replies" ADD COLUMN "digest" INTEGER;
                UPDATE "__fm_replies" SET "stored" = CAST((julianday('now') - 2440587.5) * 86400000 AS INTEGER);
                COMMIT
                """)
        }
        try database.execute("""
            CREATE INDEX IF NOT EXISTS "__fm_replies_stored" ON "__fm_replies" ("stored");
            CREATE INDEX IF NOT EXISTS "__fm_replies_owner" ON "__fm_replies" ("owner", "stored", "client")
            """)
    }

    public nonisolated(nonsending) func reply(client: String, request: String) async throws -> StoredReplyRow? {
        let statement = try database.statement(
            "SELECT \"response\", \"digest\" FROM \"__fm_replies\" WHERE \"client\" = ? AND \"request\" = ?")
        defer { statement.reset() }
        try statement.bind(client, at: 1)
        try statement.bind(request, at: 2)
        guard try statement.step() else { return nil }
        return StoredReplyRow(
            response: statement.blob(0), digest: statement.isNull(1) ? nil : UInt64(bitPattern: statement.int64(1)))
    }

    public nonisolated(nonsending) func storeReply(_ reply: ReplyToStore, pruning: ReplyPruning) async throws {
        try database.run(
            "INSERT OR REPLACE INTO \"__fm_replies\" (\"client\", \"request\", \"response\", \"owner\", \"stored\", \"digest\") "
                + "VALUES (?, ?, ?, ?, ?, ?)",
            [.text(reply.client), .text(reply.request), .blob(reply.response), .text(reply.owner), .integer(reply.storedAt),
             .integer(Int64(bitPattern: reply.digest))])
        try database.run("DELETE FROM \"__fm_replies\" WHERE \"stored\" < ? AND \"client\" <> ?",
                         [.integer(pruning.storedBefore), .text(pruning.client)])
        guard !pruning.owner.isEmpty else { return }
        try database.run(
            "DELETE FROM \"__fm_replies\" WHERE \"client\" IN (SELECT \"client\" FROM \"__fm_replies\" "
                + "WHERE \"owner\" = ? AND \"client\" <> ? ORDER BY \"stored\" DESC, \"client\" DESC LIMIT -1 OFFSET ?)",
            [.text(pruning.owner), .text(pruning.client), .integer(Int64(pruning.keeping - 1))])
    }
}
