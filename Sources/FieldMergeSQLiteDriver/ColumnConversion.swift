import FieldMerge

/// One table's column of a converted field, made anew: a new column of the new type gets
/// every row's converted value, the old one is dropped, the new one takes its name.
package struct ColumnConversion {
    /// A row whose value cannot be converted: damaged (`isCorrupt`, the stored value is not
    /// of the old type) or not convertible to the new type.
    package struct Failure: Error, CustomStringConvertible {
        package var isCorrupt: Bool
        package var message: String
        package var entity: String
        package var id: Int64
        package var description: String { "\(message) [\(entity)#\(id)]" }
    }

    let database: Database, table: String, entity: Entity, field: Int, from: FieldType

    package init(database: Database, table: String, entity: Entity, field: Int, from: FieldType) {
        (self.database, self.table, self.entity, self.field, self.from) = (database, table, entity, field, from)
    }

    package func run() throws {
        let target = entity.fields[field]
        let (quoted, column, scratch) = (Database.quote(table), Database.quote(target.name), Database.quote("__fm_converting"))
        try database.execute("ALTER TABLE \(quoted) ADD COLUMN \(scratch) \(target.type.sqliteColumnType)")
        let read = try database.statement("SELECT \"id\", \(column) FROM \(quoted)")
        var rows: [(id: Int64, value: Value)] = []
        while try read.step() {
            guard case .integer(let id) = read.value(0) else { continue }
            guard let value = read.value(1, as: from) else {
                throw Failure(isCorrupt: true, message: "the value of \(target.name) is not a \(from.name)", entity: entity.name, id: id)
            }
            rows.append((id, value))
        }
        let write = try database.statement("UPDATE \(quoted) SET \(scratch) = ? WHERE \"id\" = ?")
        for (id, value) in rows {
            let converted: Value
            do { converted = try target.convert(value, entity: entity.name) } catch {
                throw Failure(isCorrupt: false, message: error.description, entity: entity.name, id: id)
            }
            try write.bindField(converted, at: 1)
            try write.bind(id, at: 2)
            try write.execute()
            write.reset()
        }
        try database.execute("ALTER TABLE \(quoted) DROP COLUMN \(column)")
        try database.execute("ALTER TABLE \(quoted) RENAME COLUMN \(scratch) TO \(column)")
    }
}
