import FieldMerge

/// The SQL side of a schema: table definitions, column types, the canonical description
/// stored in the file to recognise a schema change.
enum StoreSchema {
    /// Columns the store adds to every entity table, after the entity's own fields.
    /// Field names cannot start with `__`, so they never collide.
    static let stampsColumn = "__fm_stamps"
    static let pendingColumn = "__fm_pending"
    static let revisionColumn = "__fm_revision"
    static let ancestorColumn = "__fm_ancestor"


    /// `CREATE TABLE` for one entity: an integer primary key, a typed column per field,
    /// foreign keys for references (checked at commit, so a transaction may write a child
    /// before its parent), and the sync metadata columns.
    static func createTable(_ entity: Entity) -> String {
        var columns = entity.columnDefinitions
        columns += [
            "\"\(stampsColumn)\" BLOB NOT NULL",
            "\"\(pendingColumn)\" INTEGER NOT NULL DEFAULT 0",
            "\"\(revisionColumn)\" INTEGER",
            "\"\(ancestorColumn)\" BLOB",
        ]
        return "CREATE TABLE \(Database.quote(entity.name)) (\n  " + columns.joined(separator: ",\n  ") + "\n)"
    }

    /// The store's own tables.
    static let metadataTables = """
        CREATE TABLE "__fm_state" ("key" TEXT PRIMARY KEY, "value" ANY) STRICT;
        CREATE TABLE "__fm_outbox" ("seq" INTEGER PRIMARY KEY AUTOINCREMENT, "entity" TEXT NOT NULL,
          "id" INTEGER NOT NULL, UNIQUE ("entity", "id"));
        CREATE TABLE "__fm_tombstones" ("entity" TEXT NOT NULL, "id" INTEGER NOT NULL,
          "deleted" BLOB NOT NULL, "stamps" BLOB NOT NULL, "pending" INTEGER NOT NULL,
          "revision" INTEGER, "ancestor" BLOB, PRIMARY KEY ("entity", "id")) WITHOUT ROWID;
        CREATE TABLE "__fm_idmap" ("entity" TEXT NOT NULL, "temporary" INTEGER NOT NULL,
          "permanent" INTEGER NOT NULL, PRIMARY KEY ("entity", "temporary")) WITHOUT ROWID;
        \(parkedTable);
        """

    /// Changes the server refused as they are, kept aside with its reason (added to
    /// existing stores when they open).
    static let parkedTable = """
        CREATE TABLE IF NOT EXISTS "__fm_parked" ("entity" TEXT NOT NULL, "id" INTEGER NOT NULL,
          "code" TEXT NOT NULL, "message" TEXT NOT NULL, "since" INTEGER NOT NULL, PRIMARY KEY ("entity", "id")) WITHOUT ROWID
        """

    /// One line per entity and field, in order: what a stored file must match.
    static func describe(_ schema: Schema) -> [String] { SchemaOutline(schema).lines }

    /// What differs between a stored description and the expected one, in words.
    static func differences(stored: [String], expected: [String]) -> String {
        let storedSet = Set(stored), expectedSet = Set(expected)
        let missing = expected.filter { !storedSet.contains($0) }
        let extra = stored.filter { !expectedSet.contains($0) }
        var parts: [String] = []
        if !missing.isEmpty { parts.append("the file lacks: " + missing.map { $0.trimmingSpaces }.joined(separator: "; ")) }
        if !extra.isEmpty { parts.append("the file has instead: " + extra.map { $0.trimmingSpaces }.joined(separator: "; ")) }
        if parts.isEmpty { parts.append("the same entities and fields in another order") }
        return parts.joined(separator: "; ")
    }
}

extension String {
    var trimmingSpaces: String { String(drop { $0 == " " }) }
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

extension FieldType {
    /// The SQLite column type a FieldMerge table declares for a field of this type.
    public var sqliteColumnType: String {
        switch self {
        case .integer, .bool, .date, .reference: return "INTEGER"
        case .real: return "REAL"
        case .text, .textSet: return "TEXT"
        case .blob: return "BLOB"
        }
    }
}

extension Schema {
    /// One line per entity and field (name, type, reference, strategies, delete policy): what
    /// a file made for this schema records, and compares on open.
    public var describedLines: [String] { StoreSchema.describe(self) }

    /// What differs between the lines a file recorded and this schema's, in words.
    public func differences(fromStored stored: [String]) -> String {
        StoreSchema.differences(stored: stored, expected: describedLines)
    }
}
