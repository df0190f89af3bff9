import FieldMerge
import FieldMergeSQLiteDriver
import FieldMergeServer

/// Copying a data set in and out (``TransferableServerStorage``): the metadata tables row by
/// row in key order, the records by id.
extension SQLiteServerStorage: TransferableServerStorage {
    public nonisolated(nonsending) func recordedSchemaLines() async throws -> [String]? {
        try Self.sqlite { () throws(SQLiteError) -> [String]? in
            guard try has("__fm_schema") else { return nil }
            let lines = try database.rows("SELECT \"text\" FROM \"__fm_schema\" ORDER BY \"line\"").compactMap { row -> String? in
                if case .text(let line)? = row.first { return line }
                return nil
            }
            return lines.isEmpty ? nil : lines
        }
    }

    public nonisolated(nonsending) func hasTable(_ table: TransferTable) async throws -> Bool {
        try Self.sqlite { () throws(SQLiteError) in try has(table.name) }
    }

    public nonisolated(nonsending) func tableRows(_ table: TransferTable, after key: [TransferCell]?, limit: Int) async throws -> [[TransferCell]] {
        let columns = table.columns.map { Database.quote($0.name) }
        let keys = columns.prefix(table.keyCount).joined(separator: ", ")
        var sql = "SELECT \(columns.joined(separator: ", ")) FROM \(Database.quote(table.name))"
        var bindings: [SQLValue] = []
        if let key {
            sql += " WHERE (\(keys)) > (\(Array(repeating: "?", count: key.count).joined(separator: ", ")))"
            bindings = key.map(Self.sqlValue)
        }
        sql += " ORDER BY \(keys) LIMIT ?"
        bindings.append(.integer(Int64(limit)))
        let found = try Self.sqlite { () throws(SQLiteError) in try database.rows(sql, bindings) }
        var rows: [[TransferCell]] = []
        rows.reserveCapacity(found.count)
        for row in found {
            var cells: [TransferCell] = []
            for (value, column) in zip(row, table.columns) {
                guard let cell = Self.cell(value, column) else {
                    throw ServerError(.corrupt, "\(table.name).\(column.name) holds \(value), which is not \(column.kind)")
                }
                cells.append(cell)
            }
            rows.append(cells)
        }
        return rows
    }

    public nonisolated(nonsending) func records(_ entity: ServerEntity, after id: Int64, limit: Int) async throws -> [ServerRow] {
        let table = table(entity)
        let statement = try Self.sqlite { () throws(SQLiteError) in
            try database.statement("SELECT \(table.sql.columnList) FROM \(table.table) WHERE \"id\" > ? ORDER BY \"id\" LIMIT ?")
        }
        defer { statement.reset() }
        var rows: [ServerRow] = []
        try Self.sqlite { () throws(SQLiteError) in
            try statement.bind(id, at: 1)
            try statement.bind(Int64(limit), at: 2)
        }
        while try Self.sqlite({ () throws(SQLiteError) in try statement.step() }) {
            rows.append(try decodeRow(statement, table, fieldRevisions: true))
        }
        return rows
    }

    public nonisolated(nonsending) func clearTable(_ table: TransferTable) async throws {
        try Self.sqlite { () throws(SQLiteError) in
            switch table {
            case .schemaVersions: try database.execute(Self.versionsTable)
            case .scopes: try database.execute("CREATE TABLE IF NOT EXISTS \"__fm_scopes\" (\"signature\" TEXT NOT NULL)")
            case .marks: try database.execute(SQLiteCompaction.marks)
            default: break
            }
            try database.execute("DELETE FROM \(Database.quote(table.name))")
        }
        windowEntities = nil
    }

    public nonisolated(nonsending) func insertRows(_ rows: [[TransferCell]], into table: TransferTable) async throws {
        let columns = table.columns.map { Database.quote($0.name) }.joined(separator: ", ")
        let marks = Array(repeating: "?", count: table.columns.count).joined(separator: ", ")
        try Self.sqlite { () throws(SQLiteError) in
            let statement = try database.statement("INSERT INTO \(Database.quote(table.name)) (\(columns)) VALUES (\(marks))")
            for row in rows {
                defer { statement.reset() }
                for (index, cell) in row.enumerated() {
                    let position = Int32(index + 1)
                    switch cell {
                    case .null: try statement.bindNull(at: position)
                    case .integer(let value): try statement.bind(value, at: position)
                    case .text(let value): try statement.bind(value, at: position)
                    case .bytes(let value): try statement.bind(value, at: position)
                    }
                }
                try statement.execute()
            }
        }
    }

    public nonisolated(nonsending) func insertRecords(_ rows: [ServerRow], of entity: ServerEntity) async throws {
        try Self.sqlite { () throws(SQLiteError) in
            for row in rows { try insert(row, of: entity) }
        }
    }

    private func has(_ table: String) throws(SQLiteError) -> Bool {
        try database.scalar("SELECT count(*) FROM sqlite_master WHERE \"type\" = 'table' AND \"name\" = ?", [.text(table)]) == .integer(1)
    }

    private static func sqlValue(_ cell: TransferCell) -> SQLValue {
        switch cell {
        case .null: .null
        case .integer(let value): .integer(value)
        case .text(let value): .text(value)
        case .bytes(let value): .blob(value)
        }
    }

    /// A stored value as a cell of `column`'s kind; nil when a damaged file holds another kind.
    private static func cell(_ value: SQLValue, _ column: TransferTable.Column) -> TransferCell? {
        switch (value, column.kind) {
        case (.null, _): column.nullable ? .null : nil
        case (.integer(let number), .integer): .integer(number)
        case (.text(let text), .text): .text(text)
        case (.blob(let bytes), .bytes): .bytes(bytes)
        default: nil
        }
    }
}
