import FieldMergeSQLiteDriver
import FieldMergeServer

/// Compaction on SQLite: `__fm_marks` (when revisions committed, one a minute), and batches
/// that remove tombstones and departures with their log entries. The statements take the
/// connection and the entities' names, so `fieldmerge admin compact` runs the same ones on
/// a file without a server (``SQLiteDataSet/compact(path:through:batch:dryRun:)``).
enum SQLiteCompaction {
    static let marks = """
        CREATE TABLE IF NOT EXISTS "__fm_marks" ("revision" INTEGER PRIMARY KEY, "at" INTEGER NOT NULL)
        """

    /// The index compaction walks (scoped servers have it already; others get it on their
    /// first compaction, not on every delete before it).
    static func prepare(_ database: Database) throws(SQLiteError) {
        try database.execute(marks)
        try database.execute("CREATE INDEX IF NOT EXISTS \"__fm_deleted_revision\" ON \"__fm_deleted\" (\"entity\", \"revision\")")
    }

    static func horizon(_ database: Database) throws(SQLiteError) -> Int64 {
        if case .integer(let value)? = try database.scalar("SELECT \"value\" FROM \"__fm_server\" WHERE \"key\" = 'horizon'") { return value }
        return 0
    }

    static func counts(_ database: Database, through revision: Int64) throws(SQLiteError) -> CompactionCounts {
        let tombstones = try database.rows(
            "SELECT count(*), coalesce(max(\"revision\"), 0) FROM \"__fm_deleted\" WHERE \"revision\" <= ?", [.integer(revision)])
        let departures = try database.rows(
            "SELECT count(*), coalesce(max(\"revision\"), 0) FROM \"__fm_departed\" WHERE \"revision\" <= ?", [.integer(revision)])
        return CompactionCounts(
            tombstones: Int(integer(tombstones.first?[0])), departures: Int(integer(departures.first?[0])),
            highest: max(integer(tombstones.first?[1]), integer(departures.first?[1])))
    }

    /// One batch: at most `limit` tombstones (entity by entity) and `limit` departures.
    static func compact(_ database: Database, entities: [String], through revision: Int64, limit: Int) throws(SQLiteError) -> CompactionCounts {
        try prepare(database)
        try pinCounters(database, entities: entities)
        var removed = CompactionCounts()
        let dropLog = try database.statement("DELETE FROM \"__fm_log\" WHERE \"entity\" = ? AND \"id\" = ?")
        let dropTombstone = try database.statement("DELETE FROM \"__fm_deleted\" WHERE \"entity\" = ? AND \"id\" = ?")
        for entity in entities where removed.tombstones < limit {
            let batch = try database.rows(
                "SELECT \"id\", \"revision\" FROM \"__fm_deleted\" WHERE \"entity\" = ? AND \"revision\" <= ? LIMIT ?",
                [.text(entity), .integer(revision), .integer(Int64(limit - removed.tombstones))])
            for row in batch {
                for statement in [dropLog, dropTombstone] {
                    statement.reset()
                    try statement.bind([.text(entity), row[0]])
                    try statement.execute()
                }
                removed.tombstones += 1
                removed.highest = max(removed.highest, integer(row[1]))
            }
        }
        let departed = try database.rows(
            "SELECT \"entity\", \"root\", \"id\", \"revision\" FROM \"__fm_departed\" WHERE \"revision\" <= ? LIMIT ?",
            [.integer(revision), .integer(Int64(limit))])
        let dropDeparture = try database.statement("DELETE FROM \"__fm_departed\" WHERE \"entity\" = ? AND \"root\" = ? AND \"id\" = ?")
        for row in departed {
            dropDeparture.reset()
            try dropDeparture.bind([row[0], row[1], row[2]])
            try dropDeparture.execute()
            removed.departures += 1
            removed.highest = max(removed.highest, integer(row[3]))
        }
        if removed.highest > 0 {
            try database.run(
                "INSERT INTO \"__fm_server\" (\"key\", \"value\") VALUES ('horizon', ?) "
                    + "ON CONFLICT (\"key\") DO UPDATE SET \"value\" = max(\"value\", excluded.\"value\")",
                [.integer(removed.highest)])
        }
        // The newest mark at or before the revision stays: it still finds that revision.
        try database.run(
            "DELETE FROM \"__fm_marks\" WHERE \"revision\" < (SELECT max(\"revision\") FROM \"__fm_marks\" WHERE \"revision\" <= ?)",
            [.integer(revision)])
        return removed
    }

    /// Every entity's counter above every id it gave (alive or deleted): ids are never given
    /// twice, also once the tombstone that remembered one is gone.
    static func pinCounters(_ database: Database, entities: [String]) throws(SQLiteError) {
        for entity in entities {
            try database.run(
                "INSERT INTO \"__fm_ids\" (\"entity\", \"next\") VALUES (?, max(coalesce((SELECT max(\"id\") FROM \(Database.quote(entity))), 0), "
                    + "coalesce((SELECT max(\"id\") FROM \"__fm_deleted\" WHERE \"entity\" = ?), 0)) + 1) "
                    + "ON CONFLICT (\"entity\") DO UPDATE SET \"next\" = max(\"next\", excluded.\"next\")",
                [.text(entity), .text(entity)])
        }
    }

    static func idBound(_ database: Database, entity: String) throws(SQLiteError) -> Int64 {
        if case .integer(let next)? = try database.scalar("SELECT \"next\" FROM \"__fm_ids\" WHERE \"entity\" = ?", [.text(entity)]) {
            return next
        }
        let largest = try database.scalar(
            "SELECT max(coalesce((SELECT max(\"id\") FROM \(Database.quote(entity))), 0), "
                + "coalesce((SELECT max(\"id\") FROM \"__fm_deleted\" WHERE \"entity\" = ?), 0))", [.text(entity)])
        return integer(largest) + 1
    }

    static func integer(_ value: SQLValue?) -> Int64 {
        if case .integer(let number)? = value { return number }
        return 0
    }
}

extension SQLiteServerStorage: CompactingServerStorage {
    public nonisolated(nonsending) func markRevision(_ revision: Int64, at time: Int64) async throws {
        try database.run("INSERT OR IGNORE INTO \"__fm_marks\" (\"revision\", \"at\") VALUES (?, ?)", [.integer(revision), .integer(time)])
    }

    public nonisolated(nonsending) func revision(markedBy time: Int64) async throws -> Int64? {
        let value = try database.scalar("SELECT max(\"revision\") FROM \"__fm_marks\" WHERE \"at\" <= ?", [.integer(time)])
        if case .integer(let revision)? = value { return revision }
        return nil
    }

    public nonisolated(nonsending) func compactable(through revision: Int64) async throws -> CompactionCounts {
        try SQLiteCompaction.counts(database, through: revision)
    }

    public nonisolated(nonsending) func compact(through revision: Int64, limit: Int) async throws -> CompactionCounts {
        try SQLiteCompaction.compact(database, entities: tables.map(\.entity.name), through: revision, limit: limit)
    }

    public nonisolated(nonsending) func idBound(_ entity: ServerEntity) async throws -> Int64 {
        try SQLiteCompaction.idBound(database, entity: entity.name)
    }
}
