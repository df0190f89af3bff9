import FieldMerge
import FieldMergeSQLiteDriver
import FieldMergeServer

/// The batched reads in one statement each: the ids travel as one bound JSON array
/// (`IN (SELECT value FROM json_each(?))`), so a list of any length takes one parameter.
extension SQLiteServerStorage {
    public nonisolated(nonsending) func rows(_ entity: ServerEntity, ids: [Int64]) async throws -> [Int64: ServerRow] {
        guard !ids.isEmpty else { return [:] }
        let table = table(entity)
        let statement = try database.statement("SELECT \(table.sql.columnList) FROM \(table.table) WHERE \"id\" IN \(Self.idList)")
        defer { statement.reset() }
        try statement.bind(Self.json(ids), at: 1)
        var rows: [Int64: ServerRow] = [:]
        while try statement.step() {
            let row = try decodeRow(statement, table, fieldRevisions: true)
            rows[row.record.id] = row
        }
        return rows
    }

    public nonisolated(nonsending) func deletions(_ entity: ServerEntity, ids: [Int64]) async throws -> [Int64: Deletion] {
        guard !ids.isEmpty else { return [:] }
        let statement = try database.statement(
            "SELECT \"id\", \"revision\", \"stamp\", \"root\" FROM \"__fm_deleted\" WHERE \"entity\" = ? AND \"id\" IN \(Self.idList)")
        defer { statement.reset() }
        try statement.bind(entity.name, at: 1)
        try statement.bind(Self.json(ids), at: 2)
        var deletions: [Int64: Deletion] = [:]
        while try statement.step() {
            let id = statement.int64(0)
            deletions[id] = Deletion(
                id: id, revision: statement.int64(1), tombstone: try Self.tombstone(statement, column: 2, entity: entity.name, id: id),
                root: statement.isNull(3) ? nil : statement.int64(3))
        }
        return deletions
    }

    public nonisolated(nonsending) func existing(_ entity: ServerEntity, ids: [Int64]) async throws -> Set<Int64> {
        guard !ids.isEmpty else { return [] }
        let statement = try database.statement("SELECT \"id\" FROM \(table(entity).table) WHERE \"id\" IN \(Self.idList)")
        defer { statement.reset() }
        try statement.bind(Self.json(ids), at: 1)
        var found: Set<Int64> = []
        while try statement.step() { found.insert(statement.int64(0)) }
        return found
    }

    public nonisolated(nonsending) func loggedRevisions(_ entity: ServerEntity, ids: [Int64]) async throws -> [Int64: Int64] {
        guard !ids.isEmpty else { return [:] }
        let statement = try database.statement(
            "SELECT \"id\", \"revision\" FROM \"__fm_log\" WHERE \"entity\" = ? AND \"id\" IN \(Self.idList)")
        defer { statement.reset() }
        try statement.bind(entity.name, at: 1)
        try statement.bind(Self.json(ids), at: 2)
        var revisions: [Int64: Int64] = [:]
        while try statement.step() { revisions[statement.int64(0)] = statement.int64(1) }
        return revisions
    }

    public nonisolated(nonsending) func nextIDs(_ entity: ServerEntity, count: Int) async throws -> [Int64] {
        guard count > 0 else { return [] }
        let first = try await nextID(entity)
        if count > 1 {
            try database.run("UPDATE \"__fm_ids\" SET \"next\" = ? WHERE \"entity\" = ?", [.integer(first + Int64(count)), .text(entity.name)])
        }
        return Array(first..<first + Int64(count))
    }

    /// The ids of a bound JSON array (``json(_:)``), as a list for `IN`.
    static let idList = "(SELECT \"value\" FROM json_each(?))"

    /// `ids` as a JSON array of integers: the one parameter ``idList`` reads.
    static func json(_ ids: [Int64]) -> String {
        var text = "["
        text.reserveCapacity(ids.count * 8 + 2)
        for (index, id) in ids.enumerated() {
            if index > 0 { text += "," }
            text += String(id)
        }
        return text + "]"
    }
}
