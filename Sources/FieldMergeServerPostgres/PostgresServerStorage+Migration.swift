import FieldMerge
import FieldMergeServer
import PostgresNIO

/// Moving a PostgreSQL data set to a newer schema version, with the rules every file follows
/// (``SchemaMigration``, Specs/schema.md "Evolution"), inside the transaction that opens it
/// (under its advisory lock, so one server process migrates and the others find it done).
extension PostgresServerStorage {
    nonisolated(nonsending) func migrate(lines: [String], version: Int, to schema: Schema, changes: [SchemaChange]) async throws {
        let old = SchemaOutline(lines: lines) ?? SchemaOutline(schema)
        try await keepVersion(version, lines: lines, old: old, changes: changes)
        let steps = SchemaMigration.Steps(changes, in: schema)
        for (from, to) in steps.entityRenames {
            try await run("ALTER TABLE \(try qualified(from)) RENAME TO \(try Self.quote(to))")
            for table in ["__fm_ids", "__fm_deleted", "__fm_log", "__fm_departed"] {
                try await run("UPDATE \(named(table)) SET \"entity\" = $1 WHERE \"entity\" = $2", Self.binds(to, from))
            }
        }
        for (entity, from, to) in steps.fieldRenames {
            try await run("ALTER TABLE \(try qualified(entity)) RENAME COLUMN \(try Self.quote(from)) TO \(try Self.quote(to))")
        }
        for (entity, count) in steps.addedFields { try await addFields(entity, count: count, version: schema.version) }
        for entity in steps.addedEntities {
            let table = try self.table(named: entity.name)
            try await run(table.createTable)
            for field in entity.fields.indices { try await addReference(table, field: field, version: schema.version) }
        }
        for (entity, field, from) in steps.convertedFields { try await convert(try table(named: entity.name), field: field, from: from) }
        if let replies = ReplyMigration(old: old, oldVersion: version, schema: schema, steps: steps) {
            for row in try await run("SELECT \"client\", \"response\" FROM \(named("__fm_replies"))") {
                let (client, bytes) = try row.decode((String, ByteBuffer).self)
                guard let migrated = replies.migrate(Array(bytes.readableBytesView)) else { continue }
                var binds = PostgresBindings()
                binds.append(ByteBuffer(bytes: migrated))
                binds.append(client)
                try await run("UPDATE \(named("__fm_replies")) SET \"response\" = $1 WHERE \"client\" = $2", binds)
            }
        }
    }

    /// Keeps the version the data set leaves, so that its clients are still answered: its
    /// lines and each of its entities' names in the new version; the versions kept before
    /// follow this migration's renames.
    private nonisolated(nonsending) func keepVersion(_ version: Int, lines: [String], old: SchemaOutline, changes: [SchemaChange]) async throws {
        try await run(
            "CREATE TABLE IF NOT EXISTS \(named("__fm_schema_versions")) "
                + "(\"version\" BIGINT PRIMARY KEY, \"lines\" TEXT NOT NULL, \"names\" TEXT NOT NULL)")
        var renamed: [String: String] = [:]
        for change in changes { if case .renameEntity(let from, let to) = change.kind { renamed[from] = to } }
        let follow = { (names: [String]) in names.map { renamed[$0] ?? $0 }.joined(separator: "\n") }
        for row in try await run("SELECT \"version\", \"names\" FROM \(named("__fm_schema_versions"))") {
            let (number, names) = try row.decode((Int64, String).self)
            try await run(
                "UPDATE \(named("__fm_schema_versions")) SET \"names\" = $1 WHERE \"version\" = $2",
                Self.binds(follow(names.split(separator: "\n").map(String.init)), number))
        }
        try await run(
            "INSERT INTO \(named("__fm_schema_versions")) (\"version\", \"lines\", \"names\") VALUES ($1, $2, $3) "
                + "ON CONFLICT (\"version\") DO UPDATE SET \"lines\" = EXCLUDED.\"lines\", \"names\" = EXCLUDED.\"names\"",
            Self.binds(Int64(version), lines.joined(separator: "\n"), follow(old.entities.map(\.name))))
    }

    /// The versions this data set has left behind, older than `current`; one that cannot
    /// be read back is left out (its clients are refused, as without it).
    nonisolated(nonsending) func readOlderSchemas(below current: Int) async throws -> [OlderSchema] {
        let found = try await scalar(
            "SELECT count(*) FROM information_schema.tables WHERE table_schema = $1 AND table_name = $2",
            Self.binds(schemaName, "__fm_schema_versions"), as: Int64.self)
        guard found == 1 else { return [] }
        return try await run("SELECT \"version\", \"lines\", \"names\" FROM \(named("__fm_schema_versions")) ORDER BY \"version\"")
            .compactMap { row -> OlderSchema? in
                guard let (version, lines, names) = try? row.decode((Int64, String, String).self), version < current,
                    let outline = SchemaOutline(lines: lines.split(separator: "\n").map(String.init))
                else { return nil }
                return try? OlderSchema(outline, version: Int(version), currentNames: names.split(separator: "\n").map(String.init))
            }
    }

    /// The last `count` fields of `entity`: a column each holding the field's default, a
    /// stamp older than any edit in every record's stamps, and the record's own revision as
    /// the field's.
    private nonisolated(nonsending) func addFields(_ entity: Entity, count: Int, version: Int) async throws {
        let table = try self.table(named: entity.name)
        let oldCount = entity.fields.count - count
        for index in oldCount..<entity.fields.count {
            let field = entity.fields[index]
            try await run("ALTER TABLE \(table.table) ADD COLUMN \(table.sql.fieldColumn(index)) \(field.type.postgresColumnType)")
            try await addReference(table, field: index, version: version)
            guard field.defaultValue != .null else { continue }
            var binds = PostgresBindings()
            try Self.bind(field.defaultValue, into: &binds)
            try await run("UPDATE \(table.table) SET \(table.sql.fieldColumn(index)) = $1", binds)
        }
        for row in try await run("SELECT \"id\", \"__fm_stamps\", \"__fm_fields\" FROM \(table.table)") {
            let (id, stamps, fields) = try row.decode((Int64, ByteBuffer, ByteBuffer?).self)
            let grown: [UInt8]
            do { grown = try BlobGrowth.growStamps(Array(stamps.readableBytesView), from: oldCount, adding: count) } catch {
                throw ServerError(.corrupt, "the stamps of \(entity.name)#\(id) are damaged")
            }
            var binds = PostgresBindings()
            binds.append(ByteBuffer(bytes: grown))
            // A field revision is a distance back from the record's; 0: the record's own.
            if let fields { binds.append(ByteBuffer(bytes: Array(fields.readableBytesView) + Array(repeating: 0, count: count))) } else {
                binds.appendNull()
            }
            binds.append(id)
            try await run("UPDATE \(table.table) SET \"__fm_stamps\" = $1, \"__fm_fields\" = $2 WHERE \"id\" = $3", binds)
        }
    }

    /// The foreign key and index of field `field`, when it is a reference. The index is named
    /// after the version that adds it: index names are per PostgreSQL schema, and positions
    /// may have moved since the tables were made.
    private nonisolated(nonsending) func addReference(_ table: PostgresServerTable, field: Int, version: Int) async throws {
        guard let foreignKey = try table.foreignKey(field: field) else { return }
        try await run(foreignKey)
        try await run(table.referenceIndex(field: field, name: "__fm_ref_v\(version)_\(table.position)_\(field)"))
    }

    /// Gives field `field` its new type through the app's conversion (``Field/convertedFrom``):
    /// every value is read with the old type, the column takes the new one, and each value
    /// is written back converted; stamps stay.
    private nonisolated(nonsending) func convert(_ table: PostgresServerTable, field: Int, from oldType: FieldType) async throws {
        let column = table.sql.fieldColumn(field), entity = table.entity
        var values: [(id: Int64, value: Value)] = []
        for row in try await run("SELECT \"id\", \(column) FROM \(table.table) WHERE \(column) IS NOT NULL") {
            let cells = row.makeRandomAccess()
            let id = try Self.decode(cells[0], as: Int64.self)
            guard let value = Self.value(cells[1], as: oldType) else {
                throw ServerError(.corrupt, "column \(entity.name).\(entity.fields[field].name) of \(id) is not \(oldType.name)")
            }
            values.append((id, value))
        }
        try await run("ALTER TABLE \(table.table) ALTER COLUMN \(column) TYPE \(entity.fields[field].type.postgresColumnType) USING NULL")
        for (id, value) in values {
            let converted: Value
            do { converted = try entity.fields[field].convert(value, entity: entity.name) } catch {
                throw ServerError(.schemaMismatch, error.description, cause: error)
            }
            var binds = PostgresBindings()
            try Self.bind(converted, into: &binds)
            binds.append(id)
            try await run("UPDATE \(table.table) SET \(column) = $1 WHERE \"id\" = $2", binds)
        }
    }

    private func table(named name: String) throws -> PostgresServerTable {
        guard let table = tables.first(where: { $0.entity.name == name }) else { throw ServerError(.corrupt, "no table for entity \(name)") }
        return table
    }

    private func qualified(_ name: String) throws -> String { schema + "." + (try Self.quote(name)) }

    static func quote(_ name: String) throws(ServerError) -> String {
        do throws(PostgresIdentifierError) { return try PostgresIdentifier.quote(name) } catch {
            throw ServerError(.storage, "the schema cannot be stored in PostgreSQL: \(error)", cause: error)
        }
    }
}
