import FieldMerge
import FieldMergeProtocol
import FieldMergeSQLiteDriver
import FieldMergeServer

/// Moving the server's file to a newer schema version, with the rules every file follows
/// (``SchemaMigration``, Specs/schema.md "Evolution"), in one transaction.
extension SQLiteServerStorage {
    /// Records the schema in a new file; in an existing one, checks it and migrates the file
    /// when `schema` is a newer version whose changes are safe.
    /// - Returns: The changes made.
    func checkSchema(_ schema: Schema) throws(ServerError) -> [SchemaChange] {
        let (stored, version) = try Self.sqlite { () throws(SQLiteError) -> ([String], Int) in
            try database.execute("""
                CREATE TABLE IF NOT EXISTS "__fm_schema" ("line" INTEGER PRIMARY KEY, "text" TEXT NOT NULL)
                """)
            let lines = try database.rows("SELECT \"text\" FROM \"__fm_schema\" ORDER BY \"line\"").compactMap { row -> String? in
                if case .text(let line)? = row.first { return line }
                return nil
            }
            let version = try database.scalar("SELECT \"value\" FROM \"__fm_server\" WHERE \"key\" = 'schemaVersion'")
            if case .integer(let number)? = version { return (lines, Int(number)) }
            return (lines, 1)
        }
        if stored.isEmpty {
            try Self.sqlite { () throws(SQLiteError) in try recordSchema(schema) }
            return []
        }
        defer { olderSchemas = (try? Self.sqlite { () throws(SQLiteError) in try readOlderSchemas(below: schema.version) }) ?? [] }
        let changes: [SchemaChange]
        do {
            changes = try SchemaMigration.plan(lines: stored, version: version, to: schema)
        } catch {
            throw ServerError(error.isDamaged ? .corrupt : .schemaMismatch, "the server's file: " + error.message)
        }
        if changes.isEmpty && version == schema.version { return [] }
        let old = SchemaOutline(lines: stored) ?? SchemaOutline(schema)
        try Self.sqlite { () throws(SQLiteError) in
            try database.execute("BEGIN IMMEDIATE")
            do throws(SQLiteError) {
                try ServerMigration(database: database, schema: schema, old: old, oldVersion: version).run(changes)
                try recordVersion(version, lines: stored, old: old, changes: changes)
                try recordSchema(schema)
                try database.execute("COMMIT")
            } catch {
                if database.isInTransaction { try? database.execute("ROLLBACK") }
                throw error
            }
        }
        return changes
    }

    /// Keeps the version the file leaves behind, so that its clients are still answered
    /// (Specs/schema.md, "Mixed-version fleets"): its lines, and each of its entities'
    /// names in the new version; the versions kept before follow this migration's renames.
    private func recordVersion(_ version: Int, lines: [String], old: SchemaOutline, changes: [SchemaChange]) throws(SQLiteError) {
        try database.execute(Self.versionsTable)
        var renamed: [String: String] = [:]
        for change in changes { if case .renameEntity(let from, let to) = change.kind { renamed[from] = to } }
        let follow = { (names: [String]) in names.map { renamed[$0] ?? $0 }.joined(separator: "\n") }
        let update = try database.statement("UPDATE \"__fm_schema_versions\" SET \"names\" = ? WHERE \"version\" = ?")
        for row in try database.rows("SELECT \"version\", \"names\" FROM \"__fm_schema_versions\"") {
            guard case .integer(let number) = row[0], case .text(let names) = row[1] else { continue }
            try update.bind(follow(names.split(separator: "\n").map(String.init)), at: 1)
            try update.bind(number, at: 2)
            try update.execute()
            update.reset()
        }
        try database.run("INSERT OR REPLACE INTO \"__fm_schema_versions\" VALUES (?, ?, ?)",
                         [.integer(Int64(version)), .text(lines.joined(separator: "\n")), .text(follow(old.entities.map(\.name)))])
    }

    /// The versions this file has left behind, older than `current`; one that cannot be
    /// read back is left out (its clients are refused, as without it).
    func readOlderSchemas(below current: Int) throws(SQLiteError) -> [OlderSchema] {
        guard try database.scalar("SELECT count(*) FROM sqlite_master WHERE name = '__fm_schema_versions'") == .integer(1) else { return [] }
        return try database.rows("SELECT \"version\", \"lines\", \"names\" FROM \"__fm_schema_versions\" ORDER BY \"version\"")
            .compactMap { row -> OlderSchema? in
                guard case .integer(let version) = row[0], version < current, case .text(let lines) = row[1], case .text(let names) = row[2],
                    let outline = SchemaOutline(lines: lines.split(separator: "\n").map(String.init))
                else { return nil }
                return try? OlderSchema(outline, version: Int(version), currentNames: names.split(separator: "\n").map(String.init))
            }
    }

    static let versionsTable = """
        CREATE TABLE IF NOT EXISTS "__fm_schema_versions" ("version" INTEGER PRIMARY KEY, "lines" TEXT NOT NULL, "names" TEXT NOT NULL)
        """

    private func recordSchema(_ schema: Schema) throws(SQLiteError) {
        try database.execute("DELETE FROM \"__fm_schema\"")
        for (number, line) in schema.describedLines.enumerated() {
            try database.run("INSERT INTO \"__fm_schema\" VALUES (?, ?)", [.integer(Int64(number)), .text(line)])
        }
        try database.run("INSERT OR REPLACE INTO \"__fm_server\" (\"key\", \"value\") VALUES ('schemaVersion', ?)",
                         [.integer(Int64(schema.version))])
    }
}

/// One migration of the server's file: entity renames, field renames, added fields, added
/// entities; rule changes need nothing stored.
struct ServerMigration {
    let database: Database
    let schema: Schema
    let old: SchemaOutline
    let oldVersion: Int

    func run(_ changes: [SchemaChange]) throws(SQLiteError) {
        let steps = SchemaMigration.Steps(changes, in: schema)
        for (from, to) in steps.entityRenames {
            try dropReferenceIndexes(from)
            try database.execute("ALTER TABLE \(Database.quote(from)) RENAME TO \(Database.quote(to))")
            // The scope indexes are named after the entity: made again under the new name.
            try database.execute("DROP INDEX IF EXISTS \(Database.quote(from + "__fm_root"))")
            try database.execute("DROP INDEX IF EXISTS \(Database.quote(from + "__fm_revision"))")
            let departed = try database.scalar("SELECT count(*) FROM sqlite_master WHERE name = '__fm_departed'") == .integer(1)
            for table in ["__fm_ids", "__fm_deleted", "__fm_log"] + (departed ? ["__fm_departed"] : []) {
                try database.run("UPDATE \(Database.quote(table)) SET \"entity\" = ? WHERE \"entity\" = ?", [.text(to), .text(from)])
            }
        }
        for (entity, from, to) in steps.fieldRenames {
            try database.execute("DROP INDEX IF EXISTS \(Database.quote("__fm_ref_\(entity)_\(from)"))")
            try database.execute("ALTER TABLE \(Database.quote(entity)) RENAME COLUMN \(Database.quote(from)) TO \(Database.quote(to))")
        }
        for (entity, count) in steps.addedFields { try addFields(entity, count: count) }
        for entity in steps.addedEntities { try database.execute(SQLiteServerTable(entity).createTable) }
        for (entity, field, from) in steps.convertedFields {
            do {
                try ColumnConversion(database: database, table: entity.name, entity: entity, field: field, from: from).run()
            } catch let error as SQLiteError {
                throw error
            } catch {
                throw SQLiteError(code: 1, message: "converting \(entity.name).\(entity.fields[field].name): \(error)", sql: nil)
            }
        }
        if let replies = ReplyMigration(old: old, oldVersion: oldVersion, schema: schema, steps: steps) {
            let update = try database.statement("UPDATE \"__fm_replies\" SET \"response\" = ? WHERE \"client\" = ?")
            for row in try database.rows("SELECT \"client\", \"response\" FROM \"__fm_replies\"") {
                guard case .text(let client) = row[0], case .blob(let bytes) = row[1], let migrated = replies.migrate(bytes) else { continue }
                try update.bind(migrated, at: 1)
                try update.bind(client, at: 2)
                try update.execute()
                update.reset()
            }
        }
    }

    private func dropReferenceIndexes(_ entity: String) throws(SQLiteError) {
        for field in old.entities.first(where: { $0.name == entity })?.fields ?? [] where field.target != nil {
            try database.execute("DROP INDEX IF EXISTS \(Database.quote("__fm_ref_\(entity)_\(field.name)"))")
        }
    }

    /// The last `count` fields of `entity`: a column each holding the field's default, a zero
    /// stamp (older than any edit) in every record's stamps, and the record's own revision
    /// as the field's (in `__fm_fields`, where a record keeps them).
    private func addFields(_ entity: Entity, count: Int) throws(SQLiteError) {
        let table = Database.quote(entity.name)
        let oldCount = entity.fields.count - count
        for (offset, field) in entity.fields[oldCount...].enumerated() {
            try database.execute("ALTER TABLE \(table) ADD COLUMN \(entity.columnDefinitions[oldCount + offset + 1])")
            guard field.defaultValue != .null else { continue }
            let statement = try database.statement("UPDATE \(table) SET \(Database.quote(field.name)) = ?")
            try statement.bindField(field.defaultValue, at: 1)
            try statement.execute()
        }
        let rows = try database.rows("SELECT \"id\", \"__fm_stamps\", \"__fm_fields\" FROM \(table)")
        let update = try database.statement("UPDATE \(table) SET \"__fm_stamps\" = ?, \"__fm_fields\" = ? WHERE \"id\" = ?")
        for row in rows {
            guard case .integer(let id) = row[0], case .blob(let bytes) = row[1] else { continue }
            let encoded: [UInt8]
            do { encoded = try BlobGrowth.growStamps(bytes, from: oldCount, adding: count) } catch {
                throw SQLiteError.damagedServerRow(entity.name, id)
            }
            try update.bind(encoded, at: 1)
            // A field revision is a distance back from the record's; 0: the record's own.
            if case .blob(let fields) = row[2] { try update.bind(fields + Array(repeating: 0, count: count), at: 2) } else {
                try update.bindNull(at: 2)
            }
            try update.bind(id, at: 3)
            try update.execute()
            update.reset()
        }
    }
}

extension SQLiteError {
    static func damagedServerRow(_ entity: String, _ id: Int64) -> SQLiteError {
        SQLiteError(code: 11, message: "the stamps of \(entity)#\(id) are damaged", sql: nil)  // SQLITE_CORRUPT
    }
}
