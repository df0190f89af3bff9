import FieldMerge

// How a FieldMerge table is shaped in SQLite, for the device's store and the server's
// SQLite storage alike: the column of each field type, the columns and indexes of an entity.

extension FieldType {
    /// The SQLite column type a FieldMerge table declares for a field of this type.
    public var sqliteColumnType: String {
        switch self {
        case .integer, .bool, .date, .reference: return "INTEGER"
        case .real: return "REAL"
        case .text, .textSet, .attachment: return "TEXT"
        case .blob: return "BLOB"
        }
    }
}

extension Entity {
    /// The column definitions of the entity's table: an integer `id` primary key and one typed
    /// column per field, references as foreign keys checked at commit (so a transaction may
    /// write a child before its parent). Stores add their metadata columns after these.
    public var columnDefinitions: [String] {
        var columns = ["\"id\" INTEGER PRIMARY KEY"]
        for field in fields {
            var column = "\(Database.quote(field.name)) \(field.type.sqliteColumnType)"
            if let target = field.type.referenceTarget {
                column += " REFERENCES \(Database.quote(target))(\"id\") DEFERRABLE INITIALLY DEFERRED"
            }
            columns.append(column)
        }
        return columns
    }

    /// `CREATE INDEX IF NOT EXISTS` for every reference column, named
    /// `__fm_ref_<entity>_<field>`: deleting a parent finds its children (the cascade, and
    /// SQLite's own foreign-key check) through them instead of scanning the child table.
    public var referenceIndexes: [String] {
        fields.compactMap { field in
            guard field.type.referenceTarget != nil else { return nil }
            return "CREATE INDEX IF NOT EXISTS \(Database.quote("__fm_ref_\(name)_\(field.name)")) "
                + "ON \(Database.quote(name)) (\(Database.quote(field.name)))"
        }
    }
}
