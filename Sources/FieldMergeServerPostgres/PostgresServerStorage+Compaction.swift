import FieldMergeServer
import PostgresNIO

/// Compaction on PostgreSQL, as on SQLite: `__fm_marks`, and batches that remove tombstones
/// (entity by entity, along the `(entity, revision)` index) and departures, each with one
/// statement that also removes the log entries and reports what went.
extension PostgresServerStorage: CompactingServerStorage {
    /// The marks table, for a data set made before it (inside ``open(schema:)``'s
    /// transaction; the catalog first, as for the scope tables).
    nonisolated(nonsending) func prepareMarks() async throws {
        guard try await !catalog().relations.contains("__fm_marks") else { return }
        try await run("CREATE TABLE IF NOT EXISTS \(named("__fm_marks")) (\"revision\" BIGINT PRIMARY KEY, \"at\" BIGINT NOT NULL)")
    }

    public nonisolated(nonsending) func markRevision(_ revision: Int64, at time: Int64) async throws {
        try await run(
            "INSERT INTO \(named("__fm_marks")) (\"revision\", \"at\") VALUES ($1, $2) ON CONFLICT (\"revision\") DO NOTHING",
            Self.binds(revision, time))
    }

    public nonisolated(nonsending) func revision(markedBy time: Int64) async throws -> Int64? {
        try await scalar("SELECT max(\"revision\") FROM \(named("__fm_marks")) WHERE \"at\" <= $1", Self.binds(time), as: Int64.self)
    }

    public nonisolated(nonsending) func compactable(through revision: Int64) async throws -> CompactionCounts {
        let sql = "SELECT (SELECT count(*) FROM \(named("__fm_deleted")) WHERE \"revision\" <= $1), "
            + "(SELECT coalesce(max(\"revision\"), 0) FROM \(named("__fm_deleted")) WHERE \"revision\" <= $1), "
            + "(SELECT count(*) FROM \(named("__fm_departed")) WHERE \"revision\" <= $1), "
            + "(SELECT coalesce(max(\"revision\"), 0) FROM \(named("__fm_departed")) WHERE \"revision\" <= $1)"
        guard let row = try await run(sql, Self.binds(revision)).first else { return CompactionCounts() }
        let (tombstones, highestTombstone, departures, highestDeparture) = try row.decode((Int64, Int64, Int64, Int64).self)
        return CompactionCounts(
            tombstones: Int(tombstones), departures: Int(departures), highest: max(highestTombstone, highestDeparture))
    }

    public nonisolated(nonsending) func compact(through revision: Int64, limit: Int) async throws -> CompactionCounts {
        if try await !catalog().relations.contains("__fm_deleted_revision") {
            try await run("CREATE INDEX IF NOT EXISTS \"__fm_deleted_revision\" ON \(named("__fm_deleted")) (\"entity\", \"revision\")")
        }
        let deleted = named("__fm_deleted"), log = named("__fm_log"), departed = named("__fm_departed")
        var removed = CompactionCounts()
        for table in tables {
            // Above every id it gave, before the tombstones that remember some of them go.
            try await run(
                "INSERT INTO \(named("__fm_ids")) AS i (\"entity\", \"next\") VALUES ($1, GREATEST("
                    + "(SELECT coalesce(max(\"id\"), 0) FROM \(table.table)), "
                    + "(SELECT coalesce(max(\"id\"), 0) FROM \(deleted) WHERE \"entity\" = $1)) + 1) "
                    + "ON CONFLICT (\"entity\") DO UPDATE SET \"next\" = GREATEST(i.\"next\", excluded.\"next\")",
                Self.binds(table.entity.name))
        }
        for table in tables where removed.tombstones < limit {
            let sql = "WITH gone AS (DELETE FROM \(deleted) d WHERE d.\"entity\" = $1 AND d.\"id\" IN "
                + "(SELECT \"id\" FROM \(deleted) WHERE \"entity\" = $1 AND \"revision\" <= $2 LIMIT $3) RETURNING d.\"id\", d.\"revision\"), "
                + "logged AS (DELETE FROM \(log) l USING gone g WHERE l.\"entity\" = $1 AND l.\"id\" = g.\"id\") "
                + "SELECT count(*), coalesce(max(\"revision\"), 0) FROM gone"
            guard let row = try await run(sql, Self.binds(table.entity.name, revision, Int64(limit - removed.tombstones))).first
            else { continue }
            let (count, highest) = try row.decode((Int64, Int64).self)
            removed.tombstones += Int(count)
            removed.highest = max(removed.highest, highest)
        }
        let sql = "WITH gone AS (DELETE FROM \(departed) d WHERE (d.\"entity\", d.\"root\", d.\"id\") IN "
            + "(SELECT \"entity\", \"root\", \"id\" FROM \(departed) WHERE \"revision\" <= $1 LIMIT $2) RETURNING d.\"revision\") "
            + "SELECT count(*), coalesce(max(\"revision\"), 0) FROM gone"
        if let row = try await run(sql, Self.binds(revision, Int64(limit))).first {
            let (count, highest) = try row.decode((Int64, Int64).self)
            removed.departures = Int(count)
            removed.highest = max(removed.highest, highest)
        }
        if removed.highest > 0 {
            try await run(
                "INSERT INTO \(named("__fm_server")) AS s (\"key\", \"value\") VALUES ('horizon', $1) "
                    + "ON CONFLICT (\"key\") DO UPDATE SET \"value\" = GREATEST(s.\"value\", excluded.\"value\")",
                Self.binds(removed.highest))
        }
        try await run(
            "DELETE FROM \(named("__fm_marks")) WHERE \"revision\" < "
                + "(SELECT max(\"revision\") FROM \(named("__fm_marks")) WHERE \"revision\" <= $1)",
            Self.binds(revision))
        windowEntities = nil
        return removed
    }

    public nonisolated(nonsending) func idBound(_ entity: ServerEntity) async throws -> Int64 {
        if let counter = idCounters[entity.position] { return counter.next }  // moved in this transaction, not written yet
        if let next = try await scalar(
            "SELECT \"next\" FROM \(named("__fm_ids")) WHERE \"entity\" = $1", Self.binds(entity.name), as: Int64.self)
        {
            return next
        }
        let largest = try await scalar(
            "SELECT GREATEST((SELECT coalesce(max(\"id\"), 0) FROM \(table(entity).table)), "
                + "(SELECT coalesce(max(\"id\"), 0) FROM \(named("__fm_deleted")) WHERE \"entity\" = $1))",
            Self.binds(entity.name), as: Int64.self)
        return (largest ?? 0) + 1
    }
}
