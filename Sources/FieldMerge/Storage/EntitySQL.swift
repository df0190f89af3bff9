/// The SQL of one entity's table where the storages agree (the device's store, the server's
/// SQLite and PostgreSQL storages): its columns, and the statements that find, read and
/// delete a row by id. Built once per entity from names the storage has quoted already, so
/// that each keeps its own quoting and its own metadata columns; values are always bound
/// (`parameter`), never spliced.
package struct EntitySQL: Sendable {
    /// The quoted table name (schema-qualified where the storage has schemas).
    package let table: String
    /// The quoted columns a row is read from and written to: `"id"`, each field's column in
    /// the schema's order, then the storage's metadata columns.
    package let columns: [String]
    /// `columns`, comma-separated.
    package let columnList: String
    /// The bind parameter of a statement's one value: `?` in SQLite, `$1` in PostgreSQL.
    package let parameter: String
    /// The row with the id `parameter`, all its columns.
    package let select: String
    /// `1` when a row has the id `parameter`.
    package let exists: String
    /// Deletes the row with the id `parameter`.
    package let delete: String

    /// - Parameters:
    ///   - table: the quoted table name.
    ///   - fieldColumns: each field's quoted column, in the schema's order.
    ///   - metadata: the storage's quoted metadata columns, after the fields.
    ///   - parameter: how a statement's one bound value is written.
    package init(table: String, fieldColumns: [String], metadata: [String], parameter: String) {
        self.table = table
        self.parameter = parameter
        columns = ["\"id\""] + fieldColumns + metadata
        columnList = columns.joined(separator: ", ")
        select = "SELECT \(columnList) FROM \(table) WHERE \"id\" = \(parameter)"
        exists = "SELECT 1 FROM \(table) WHERE \"id\" = \(parameter)"
        delete = "DELETE FROM \(table) WHERE \"id\" = \(parameter)"
    }

    /// `columns` each prefixed with `alias.`, comma-separated (for joins).
    package func columnList(alias: String) -> String {
        columns.map { alias + "." + $0 }.joined(separator: ", ")
    }

    /// `select`'s columns read from `source` (another table of the same columns) instead.
    package func select(from source: String) -> String {
        "SELECT \(columnList) FROM \(source) WHERE \"id\" = \(parameter)"
    }

    /// `ON CONFLICT ("id") DO UPDATE SET` every column but the id to the one being inserted:
    /// what makes an insert of a whole row an upsert.
    package var onConflictUpdate: String {
        "ON CONFLICT (\"id\") DO UPDATE SET " + columns.dropFirst().map { "\($0) = excluded.\($0)" }.joined(separator: ", ")
    }

    /// `?, ?, ...`: one SQLite parameter per column.
    package var placeholders: String {
        Array(repeating: "?", count: columns.count).joined(separator: ", ")
    }

    /// The quoted column of field `index`.
    package func fieldColumn(_ index: Int) -> String { columns[index + 1] }

    /// The ids of the rows whose field `index` holds `parameter`, ascending.
    package func referencing(field index: Int) -> String {
        "SELECT \"id\" FROM \(table) WHERE \(fieldColumn(index)) = \(parameter) ORDER BY \"id\""
    }
}
