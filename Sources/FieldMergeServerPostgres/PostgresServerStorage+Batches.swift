import FieldMerge
import FieldMergeServer
import PostgresNIO

/// The batched calls, one statement each whatever the number of ids: the ids travel as one
/// bound `bigint[]` (`= ANY($n)`).
extension PostgresServerStorage {
    public nonisolated(nonsending) func rows(_ entity: ServerEntity, ids: [Int64]) async throws -> [Int64: ServerRow] {
        guard !ids.isEmpty else { return [:] }
        let table = table(entity)
        var rows: [Int64: ServerRow] = [:]
        for row in try await run(table.selectAny, Self.binds(ids: ids)) {
            let decoded = try Self.decodeRow(row, table, fieldRevisions: true)
            rows[decoded.record.id] = decoded
        }
        return rows
    }

    public nonisolated(nonsending) func deletions(_ entity: ServerEntity, ids: [Int64]) async throws -> [Int64: Deletion] {
        guard !ids.isEmpty else { return [:] }
        var deletions: [Int64: Deletion] = [:]
        for row in try await run(
            "SELECT \"id\", \"revision\", \"stamp\", \"root\" FROM \(named("__fm_deleted")) WHERE \"entity\" = $1 AND \"id\" = ANY($2)",
            Self.binds(entity.name, ids: ids))
        {
            let deletion = try Self.decodeDeletion(row, entity: entity)
            deletions[deletion.id] = deletion
        }
        return deletions
    }

    public nonisolated(nonsending) func existing(_ entity: ServerEntity, ids: [Int64]) async throws -> Set<Int64> {
        guard !ids.isEmpty else { return [] }
        return Set(try await run(table(entity).existsAny, Self.binds(ids: ids)).map { try $0.decode(Int64.self) })
    }

    public nonisolated(nonsending) func loggedRevisions(_ entity: ServerEntity, ids: [Int64]) async throws -> [Int64: Int64] {
        guard !ids.isEmpty else { return [:] }
        var revisions: [Int64: Int64] = [:]
        for row in try await run(
            "SELECT \"id\", \"revision\" FROM \(named("__fm_log")) WHERE \"entity\" = $1 AND \"id\" = ANY($2)", Self.binds(entity.name, ids: ids))
        {
            let (id, revision) = try row.decode((Int64, Int64).self)
            revisions[id] = revision
        }
        return revisions
    }

    /// `first`, if any, then `ids` as one `bigint[]` parameter (never one parameter per id).
    static func binds(_ first: String? = nil, ids: [Int64]) -> PostgresBindings {
        var binds = PostgresBindings(capacity: 2)
        if let first { binds.append(first) }
        binds.append(ids)
        return binds
    }

    /// One round trip for any count: the counter moves on by `count`, or starts after the
    /// largest id in the table.
    public nonisolated(nonsending) func nextIDs(_ entity: ServerEntity, count: Int) async throws -> [Int64] {
        guard count > 0 else { return [] }
        let ids = named("__fm_ids")
        guard let first = try await scalar(
            "INSERT INTO \(ids) AS i (\"entity\", \"next\") "
                + "VALUES ($1, (SELECT coalesce(max(\"id\"), 0) + 1 + $2 FROM \(table(entity).table))) "
                + "ON CONFLICT (\"entity\") DO UPDATE SET \"next\" = i.\"next\" + $2 RETURNING \"next\" - $2",
            Self.binds(entity.name, Int64(count)), as: Int64.self)
        else { throw ServerError(.corrupt, "the id counter of \(entity.name) is damaged") }
        return Array(first..<first + Int64(count))
    }
}
