import FieldMerge
import FieldMergeProtocol
import FieldMergeSQLiteDriver
import FieldMergeServer

/// One entity's table on the server, and its statements.
final class SQLiteServerTable {
    let entity: Entity
    /// The statements on one row by id; `sql.columnList` is the columns a row is read from,
    /// in the order ``SQLiteServerStorage/decodeRow`` reads them.
    let sql: EntitySQL
    /// `INSERT OR REPLACE` of every column.
    let insert: String
    /// The records of this entity alive and changed in a window of revisions, in log order
    /// (bindings: entity, after, through); the same for deleted ones (id, revision, stamp).
    ///
    /// Both walk the log's revision index over the window and keep this entity's entries
    /// (`+` keeps SQLite from reading them by the log's key instead, which starts with the
    /// entity: all of the entity's entries, for every page). Ordered as that index is, so
    /// nothing is sorted.
    let changedAlive: String, changedDeleted: String
    /// The two hottest statements, kept here: cheaper than finding them by their SQL text.
    var selectStatement: Statement?
    var insertStatement: Statement?
    /// How each field's column is read (``decodeRow``), worked out once.
    let kinds: [ValueKind]

    init(_ entity: Entity) {
        self.entity = entity
        kinds = entity.fields.map(\.type.valueKind)
        sql = EntitySQL(
            table: Database.quote(entity.name), fieldColumns: entity.fields.map { Database.quote($0.name) },
            metadata: ServerRow.metadataColumns, parameter: "?")
        let window = "WHERE +l.\"entity\" = ? AND l.\"revision\" > ? AND l.\"revision\" <= ? ORDER BY l.\"revision\", l.\"entity\", l.\"id\""
        changedAlive = "SELECT \(sql.columnList(alias: "t")) FROM \"__fm_log\" l JOIN \(sql.table) t ON t.\"id\" = l.\"id\" " + window
        changedDeleted = "SELECT l.\"id\", d.\"revision\", d.\"stamp\" FROM \"__fm_log\" l JOIN \"__fm_deleted\" d "
            + "ON d.\"entity\" = l.\"entity\" AND d.\"id\" = l.\"id\" " + window
        insert = "INSERT OR REPLACE INTO \(sql.table) (\(sql.columnList)) VALUES (\(sql.placeholders))"
    }

    /// The quoted table name.
    var table: String { sql.table }

    var createTable: String {
        let columns = entity.columnDefinitions + ServerRow.metadataDefinitions(blob: "BLOB", integer: "INTEGER")
        return "CREATE TABLE \(table) (" + columns.joined(separator: ", ") + ")"
    }
}

extension SQLiteServerStorage {
    public nonisolated(nonsending) func row(_ entity: ServerEntity, id: Int64) async throws -> ServerRow? {
        let table = table(entity)
        let statement = try cached(&table.selectStatement, table.sql.select)
        defer { statement.reset() }
        try statement.bind(id, at: 1)
        guard try statement.step() else { return nil }
        return try decodeRow(statement, table, fieldRevisions: true)
    }

    public nonisolated(nonsending) func exists(_ entity: ServerEntity, id: Int64) async throws -> Bool {
        let statement = try database.statement(table(entity).sql.exists)
        defer { statement.reset() }
        try statement.bind(id, at: 1)
        return try statement.step()
    }

    public nonisolated(nonsending) func write(_ row: ServerRow, of entity: ServerEntity) async throws {
        try insert(row, of: entity)
        try log(entity.name, id: row.record.id, revision: row.revision)
    }

    /// Writes `row` into its entity's table, replacing the record it names; no log entry.
    func insert(_ row: ServerRow, of entity: ServerEntity) throws(SQLiteError) {
        let table = table(entity)
        let statement = try cached(&table.insertStatement, table.insert)
        defer { statement.reset() }
        try statement.bind(row.record.id, at: 1)
        for (index, value) in row.record.values.enumerated() { try statement.bindField(value, at: Int32(index + 2)) }
        let count = Int32(entity.entity.fields.count)
        try statement.bind(ServerRow.encodeStamps(row.record.stamps), at: count + 2)
        try statement.bind(row.revision, at: count + 3)
        try statement.bind(row.created, at: count + 4)
        if let fields = row.fieldRevisions {
            try statement.bind(ServerRow.encode(fields, revision: row.revision), at: count + 5)
        } else {
            try statement.bindNull(at: count + 5)
        }
        if let root = row.root { try statement.bind(root, at: count + 6) } else { try statement.bindNull(at: count + 6) }
        try statement.execute()
    }

    public nonisolated(nonsending) func delete(_ entity: ServerEntity, id: Int64, tombstone: Stamp, revision: Int64) async throws {
        // The tombstone keeps the record's root, read before the row goes.
        try database.run(
            "INSERT OR REPLACE INTO \"__fm_deleted\" (\"entity\", \"id\", \"revision\", \"stamp\", \"root\") "
                + "VALUES (?, ?, ?, ?, (SELECT \"__fm_root\" FROM \(table(entity).table) WHERE \"id\" = ?))",
            [.text(entity.name), .integer(id), .integer(revision), .blob(ServerRow.encodeStamps([tombstone])), .integer(id)])
        try database.run(table(entity).sql.delete, [.integer(id)])
        try log(entity.name, id: id, revision: revision)
    }

    public nonisolated(nonsending) func deletion(_ entity: ServerEntity, id: Int64) async throws -> Deletion? {
        let statement = try database.statement(
            "SELECT \"revision\", \"stamp\", \"root\" FROM \"__fm_deleted\" WHERE \"entity\" = ? AND \"id\" = ?")
        defer { statement.reset() }
        try statement.bind(entity.name, at: 1)
        try statement.bind(id, at: 2)
        guard try statement.step() else { return nil }
        return Deletion(
            id: id, revision: statement.int64(0), tombstone: try Self.tombstone(statement, column: 1, entity: entity.name, id: id),
            root: statement.isNull(2) ? nil : statement.int64(2))
    }

    public nonisolated(nonsending) func forgetDeletion(_ entity: ServerEntity, id: Int64) async throws {
        windowEntities = nil
        try database.run("DELETE FROM \"__fm_deleted\" WHERE \"entity\" = ? AND \"id\" = ?", [.text(entity.name), .integer(id)])
    }

    public nonisolated(nonsending) func referencing(_ id: Int64, from entity: ServerEntity, field: Int) async throws -> [Int64] {
        try database.rows(table(entity).sql.referencing(field: field), [.integer(id)])
            .compactMap { row in
                if case .integer(let child)? = row.first { return child }
                return nil
            }
    }

    public nonisolated(nonsending) func logRevision(after revision: Int64, offset: Int) async throws -> Int64? {
        let value = try database.scalar(
            "SELECT \"revision\" FROM \"__fm_log\" WHERE \"revision\" > ? ORDER BY \"revision\" LIMIT 1 OFFSET ?",
            [.integer(revision), .integer(Int64(offset))])
        if case .integer(let found)? = value { return found }
        return nil
    }

    public nonisolated(nonsending) func loggedRevision(_ entity: ServerEntity, id: Int64) async throws -> Int64? {
        let value = try database.scalar(
            "SELECT \"revision\" FROM \"__fm_log\" WHERE \"entity\" = ? AND \"id\" = ?", [.text(entity.name), .integer(id)])
        if case .integer(let found)? = value { return found }
        return nil
    }

    public nonisolated(nonsending) func logged(_ entity: ServerEntity, ids: [Int64], after revision: Int64) async throws -> [Int64] {
        let lookup = try database.statement("SELECT \"revision\" FROM \"__fm_log\" WHERE \"entity\" = ? AND \"id\" = ?")
        defer { lookup.reset() }
        var found: [Int64] = []
        for id in ids {
            lookup.reset()
            try lookup.bind(entity.name, at: 1)
            try lookup.bind(id, at: 2)
            if try lookup.step(), lookup.int64(0) > revision { found.append(id) }
        }
        return found
    }

    public nonisolated(nonsending) func changes(_ entity: ServerEntity, after: Int64, through: Int64) async throws -> (alive: [ServerRow], deleted: [Deletion]) {
        guard let anyDeleted = try entitiesLogged(after: after, through: through)[entity.name] else { return ([], []) }
        let table = table(entity)
        var alive: [ServerRow] = []
        let rows = try database.statement(table.changedAlive)
        defer { rows.reset() }
        try rows.bind([.text(entity.name), .integer(after), .integer(through)])
        while try rows.step() { alive.append(try decodeRow(rows, table, fieldRevisions: false)) }
        guard anyDeleted else { return (alive, []) }
        var deleted: [Deletion] = []
        let tombstones = try database.statement(table.changedDeleted)
        defer { tombstones.reset() }
        try tombstones.bind([.text(entity.name), .integer(after), .integer(through)])
        while try tombstones.step() {
            let id = tombstones.int64(0)
            deleted.append(Deletion(
                id: id, revision: tombstones.int64(1), tombstone: try Self.tombstone(tombstones, column: 2, entity: entity.name, id: id)))
        }
        return (alive, deleted)
    }

    /// The entities with log entries in `after...through`, each with whether any of them is
    /// a deletion: each entity's statements walk the whole window, so entities without
    /// entries in it are not asked about (``windowEntities``).
    private func entitiesLogged(after: Int64, through: Int64) throws(SQLiteError) -> [String: Bool] {
        if let known = windowEntities, known.after == after, known.through == through { return known.names }
        let rows = try database.rows(
            "SELECT DISTINCT l.\"entity\", d.\"id\" IS NOT NULL FROM \"__fm_log\" l LEFT JOIN \"__fm_deleted\" d "
                + "ON d.\"entity\" = l.\"entity\" AND d.\"id\" = l.\"id\" WHERE l.\"revision\" > ? AND l.\"revision\" <= ?",
            [.integer(after), .integer(through)])
        var names: [String: Bool] = [:]
        for row in rows {
            guard row.count == 2, case .text(let name) = row[0], case .integer(let deleted) = row[1] else { continue }
            names[name] = names[name] == true || deleted != 0
        }
        if database.isInTransaction { windowEntities = (after, through, names) }
        return names
    }

    // MARK: Rows

    /// The row `statement` stands on, whose columns are the table's.
    func decodeRow(_ statement: Statement, _ table: SQLiteServerTable, fieldRevisions readFields: Bool) throws(ServerError) -> ServerRow {
        let entity = table.entity
        let id = statement.int64(0)
        var values = ContiguousArray<Value>()
        values.reserveCapacity(entity.fields.count)
        for (index, kind) in table.kinds.enumerated() {
            guard let value = statement.value(Int32(index + 1), as: kind) else {
                let field = entity.fields[index]
                throw ServerError(.corrupt, "column \(entity.name).\(field.name) of \(id) is not \(field.type.name)")
            }
            values.append(value)
        }
        let count = entity.fields.count
        guard let decoded = statement.withBlob(Int32(count + 1), { ServerRow.decodeStamps($0, count: count) }) else {
            throw ServerError(.corrupt, "the stamps of \(entity.name)#\(id) are damaged")
        }
        let revision = statement.int64(Int32(count + 2))
        var fieldRevisions: ContiguousArray<Int64>?
        if readFields, !statement.isNull(Int32(count + 4)) {
            fieldRevisions = statement.withBlob(Int32(count + 4)) { ServerRow.decode($0, count: count, revision: revision) }
            guard fieldRevisions != nil else {
                throw ServerError(.corrupt, "the field revisions of \(entity.name)#\(id) are damaged")
            }
        }
        return ServerRow(
            record: Record(entity: entity.name, id: id, values: values, stamps: decoded),
            revision: revision, created: statement.int64(Int32(count + 3)), fieldRevisions: fieldRevisions,
            root: statement.isNull(Int32(count + 5)) ? nil : statement.int64(Int32(count + 5)))
    }

    /// The tombstone stamp in `column` of the row `statement` stands on.
    static func tombstone(_ statement: Statement, column: Int32, entity: String, id: Int64) throws(ServerError) -> Stamp {
        guard let stamp = statement.withBlob(column, { ServerRow.decodeStamps($0, count: 1) })?.first else {
            throw ServerError(.corrupt, "the tombstone of \(entity)#\(id) is damaged")
        }
        return stamp
    }

    private func cached(_ slot: inout Statement?, _ sql: String) throws(SQLiteError) -> Statement {
        if let statement = slot { return statement }
        let statement = try database.statement(sql)
        slot = statement
        return statement
    }

    func log(_ entity: String, id: Int64, revision: Int64) throws(SQLiteError) {
        windowEntities = nil
        try probe.measure(.log) { () throws(SQLiteError) in
            try database.run(
                "INSERT OR REPLACE INTO \"__fm_log\" (\"entity\", \"id\", \"revision\") VALUES (?, ?, ?)",
                [.text(entity), .integer(id), .integer(revision)])
        }
    }
}
