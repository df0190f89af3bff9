import FieldMerge
import FieldMergeServer
import PostgresNIO

/// Copying a data set in and out (``TransferableServerStorage``): the metadata tables row by
/// row in key order, the records by id, inserts of many rows per statement.
extension PostgresServerStorage: TransferableServerStorage {
    public nonisolated(nonsending) func recordedSchemaLines() async throws -> [String]? {
        try await connector.check()
        return try await transaction("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY") {
            guard try await hasTable(named: "__fm_schema") else { return nil }
            var lines: [String] = []
            for row in try await run("SELECT \"text\" FROM \(named("__fm_schema")) ORDER BY \"line\"") {
                lines.append(try row.decode(String.self))
            }
            return lines.isEmpty ? nil : lines
        }
    }

    /// Whether the PostgreSQL schema exists at all (with a data set or anything else in it),
    /// so that a tool removes only a schema it made itself. Called outside any transaction.
    public nonisolated(nonsending) func schemaExists() async throws -> Bool {
        try await connector.check()
        return try await transaction("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY") {
            try await scalar("SELECT count(*) FROM pg_namespace WHERE nspname = $1", Self.binds(schemaName), as: Int64.self) == 1
        }
    }

    public nonisolated(nonsending) func hasTable(_ table: TransferTable) async throws -> Bool {
        try await hasTable(named: table.name)
    }

    private nonisolated(nonsending) func hasTable(named name: String) async throws -> Bool {
        try await scalar(
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = $1 AND table_name = $2",
            Self.binds(schemaName, name), as: Int64.self) == 1
    }

    public nonisolated(nonsending) func tableRows(_ table: TransferTable, after key: [TransferCell]?, limit: Int) async throws -> [[TransferCell]] {
        let columns = table.columns.map { "\"\($0.name)\"" }
        let keys = columns.prefix(table.keyCount).joined(separator: ", ")
        var sql = "SELECT \(columns.joined(separator: ", ")) FROM \(named(table.name))"
        var binds = PostgresBindings()
        var conditions: [String] = []
        if let key {
            let parameters = (1...key.count).map { "$\($0)" }.joined(separator: ", ")
            conditions.append("(\(keys)) > (\(parameters))")
            for cell in key { Self.bind(cell, into: &binds) }
        }
        // How writes are ordered belongs to the servers, not to the data set they move.
        if table == .server { conditions.append("\"key\" <> '\(Self.writeOrderKey)'") }
        if !conditions.isEmpty { sql += " WHERE " + conditions.joined(separator: " AND ") }
        sql += " ORDER BY \(keys) LIMIT \(max(1, limit))"
        var rows: [[TransferCell]] = []
        for row in try await run(sql, binds) {
            var cells: [TransferCell] = []
            for (cell, column) in zip(row, table.columns) {
                guard cell.bytes != nil else {
                    guard column.nullable else { throw ServerError(.corrupt, "\(table.name).\(column.name) holds null") }
                    cells.append(.null)
                    continue
                }
                switch column.kind {
                case .integer: cells.append(.integer(try Self.decode(cell, as: Int64.self)))
                case .text: cells.append(.text(try Self.decode(cell, as: String.self)))
                case .bytes: cells.append(.bytes(Array(try Self.decode(cell, as: ByteBuffer.self).readableBytesView)))
                }
            }
            rows.append(cells)
        }
        return rows
    }

    public nonisolated(nonsending) func records(_ entity: ServerEntity, after id: Int64, limit: Int) async throws -> [ServerRow] {
        let table = table(entity)
        let rows = try await run(
            "SELECT \(table.sql.columnList) FROM \(table.table) WHERE \"id\" > $1 ORDER BY \"id\" LIMIT \(max(1, limit))", Self.binds(id))
        return try rows.map { (row) throws(ServerError) in try Self.decodeRow(row, table, fieldRevisions: true) }
    }

    public nonisolated(nonsending) func clearTable(_ table: TransferTable) async throws {
        windowEntities = nil
        if table == .ids { idCounters = [:] }  // read again from what is written next
        if table == .schemaVersions {
            try await run(
                "CREATE TABLE IF NOT EXISTS \(named("__fm_schema_versions")) "
                    + "(\"version\" BIGINT PRIMARY KEY, \"lines\" TEXT NOT NULL, \"names\" TEXT NOT NULL)")
        }
        try await run("DELETE FROM \(named(table.name))")
    }

    public nonisolated(nonsending) func insertRows(_ rows: [[TransferCell]], into table: TransferTable) async throws {
        if table == .ids { idCounters = [:] }
        let columns = table.columns.map { "\"\($0.name)\"" }.joined(separator: ", ")
        for chunk in Self.chunks(rows, width: table.columns.count) {
            var binds = PostgresBindings(capacity: chunk.count * table.columns.count)
            for row in chunk {
                for cell in row {
                    if case .text(let text) = cell { _ = try Self.storable(text) }
                    Self.bind(cell, into: &binds)
                }
            }
            try await run("INSERT INTO \(named(table.name)) (\(columns)) VALUES " + PostgresServerTable.rows(chunk.count, width: table.columns.count, first: 1), binds)
        }
        if table == .server { try await markWriteOrder() }
    }

    public nonisolated(nonsending) func insertRecords(_ rows: [ServerRow], of entity: ServerEntity) async throws {
        windowEntities = nil
        let table = table(entity)
        let width = table.sql.columns.count
        for chunk in Self.chunks(rows, width: width) {
            var binds = PostgresBindings(capacity: chunk.count * width)
            for row in chunk { try Self.bind(row, into: &binds) }
            try await run("INSERT INTO \(table.table) (\(table.sql.columnList)) VALUES " + PostgresServerTable.rows(chunk.count, width: width, first: 1), binds)
        }
    }

    private static func bind(_ cell: TransferCell, into binds: inout PostgresBindings) {
        switch cell {
        case .null: binds.appendNull()
        case .integer(let value): binds.append(value)
        case .text(let value): binds.append(value)
        case .bytes(let value): binds.append(ByteBuffer(bytes: value))
        }
    }

    /// `rows` in runs that each fit PostgreSQL's 65,535 parameters per statement.
    private static func chunks<T>(_ rows: [T], width: Int) -> [ArraySlice<T>] {
        let size = max(1, PendingRecords.maxBinds / max(1, width))
        return stride(from: 0, to: rows.count, by: size).map { rows[$0..<min(rows.count, $0 + size)] }
    }
}
