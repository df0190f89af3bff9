import FieldMerge
import FieldMergeServer
import PostgresNIO

extension PostgresServerStorage {
    /// Connects, creates the PostgreSQL schema and its tables when missing, and checks that
    /// a data set made for another schema is not opened with this one.
    ///
    /// Servers opening the same data set at once take turns (an advisory lock on its name),
    /// so only one creates the tables, or adds what scopes need to a data set made before
    /// them (`prepareScopeTables()`, `prepareEntityRoots()`).
    ///
    /// - Throws: `ServerError/Code/storage` when the database cannot be
    ///   reached (with the cause) or a name cannot be a PostgreSQL identifier;
    ///   `ServerError/Code/schemaMismatch` saying what differs.
    public nonisolated(nonsending) func open(schema: Schema) async throws {
        do throws(PostgresIdentifierError) {
            tables = []
            for (position, entity) in schema.entities.enumerated() {
                tables.append(try PostgresServerTable(entity, position: position, schema: self.schema))
            }
        } catch {
            throw ServerError(.storage, "the schema cannot be stored in PostgreSQL: \(error)", cause: error)
        }
        try await connector.check()
        try await transaction("BEGIN") {
            // Opening may migrate a large data set: no statement timeout of the pool's applies.
            try await run("SET LOCAL statement_timeout = 0")
            try await run("SELECT pg_advisory_xact_lock(hashtext($1))", Self.binds("fieldmerge:" + schemaName))
            try await run("CREATE SCHEMA IF NOT EXISTS \(self.schema)")
            let found = try await scalar(
                "SELECT count(*) FROM information_schema.tables WHERE table_schema = $1 AND table_name = $2",
                Self.binds(schemaName, "__fm_server"), as: Int64.self)
            if found == 0 { try await createTables() }
            try await prepareScopeTables()
            try await prepareReplies()
            try await prepareMarks()
            try await checkSchema(schema)
            try await prepareEntityRoots()
            try await prepareParallelWrites()
        }
    }

    private nonisolated(nonsending) func createTables() async throws {
        for statement in [
            "CREATE TABLE \(named("__fm_server")) (\"key\" TEXT PRIMARY KEY, \"value\" BIGINT NOT NULL)",
            "CREATE TABLE \(named("__fm_ids")) (\"entity\" TEXT PRIMARY KEY, \"next\" BIGINT NOT NULL)",
            "CREATE TABLE \(named("__fm_deleted")) (\"entity\" TEXT NOT NULL, \"id\" BIGINT NOT NULL, "
                + "\"revision\" BIGINT NOT NULL, \"stamp\" BYTEA NOT NULL, \"root\" BIGINT, PRIMARY KEY (\"entity\", \"id\"))",
            "CREATE TABLE \(named("__fm_log")) (\"entity\" TEXT NOT NULL, \"id\" BIGINT NOT NULL, "
                + "\"revision\" BIGINT NOT NULL, PRIMARY KEY (\"entity\", \"id\"))",
            "CREATE INDEX \"__fm_log_revision\" ON \(named("__fm_log")) (\"revision\", \"entity\", \"id\")",
            "CREATE INDEX \"__fm_log_entity\" ON \(named("__fm_log")) (\"entity\", \"revision\", \"id\")",
            "CREATE TABLE \(named("__fm_replies")) (\"client\" TEXT PRIMARY KEY, \"request\" TEXT NOT NULL, \"response\" BYTEA NOT NULL, "
                + "\"owner\" TEXT NOT NULL DEFAULT '', \"stored\" BIGINT NOT NULL DEFAULT 0, \"digest\" BIGINT)",
            "CREATE TABLE \(named("__fm_schema")) (\"line\" BIGINT PRIMARY KEY, \"text\" TEXT NOT NULL)",
        ] + tables.map(\.createTable) + tables.flatMap(\.foreignKeys) + tables.flatMap(\.referenceIndexes) {
            try await run(statement)
        }
        let insert = "INSERT INTO \(named("__fm_server")) (\"key\", \"value\") VALUES ($1, $2)"
        try await run(insert, Self.binds("maxRevision", Int64(0)))
        try await run(insert, Self.binds("clock", Int64(0)))
    }

    /// Records the schema's lines and version in a new data set, or checks them against the
    /// stored ones by the rules every file follows (``SchemaMigration``) and migrates the
    /// data set to a newer version whose changes are safe.
    private nonisolated(nonsending) func checkSchema(_ schema: Schema) async throws {
        var stored: [String] = []
        for row in try await run("SELECT \"text\" FROM \(named("__fm_schema")) ORDER BY \"line\"") {
            stored.append(try row.decode(String.self))
        }
        let expected = schema.describedLines
        let recordVersion = {
            try await self.run(
                "INSERT INTO \(self.named("__fm_server")) (\"key\", \"value\") VALUES ('schemaVersion', $1) "
                    + "ON CONFLICT (\"key\") DO UPDATE SET \"value\" = EXCLUDED.\"value\"", Self.binds(Int64(schema.version)))
        }
        let recordLines = {
            try await self.run("DELETE FROM \(self.named("__fm_schema"))")
            for (number, line) in expected.enumerated() {
                try await self.run("INSERT INTO \(self.named("__fm_schema")) (\"line\", \"text\") VALUES ($1, $2)", Self.binds(Int64(number), line))
            }
        }
        openedVersion = schema.version
        if stored.isEmpty {
            try await recordLines()
            _ = try await recordVersion()
            return
        }
        var version = 1
        for row in try await run("SELECT \"value\" FROM \(named("__fm_server")) WHERE \"key\" = 'schemaVersion'") {
            version = Int(try row.decode(Int64.self))
        }
        let changes: [SchemaChange]
        do {
            changes = try SchemaMigration.plan(lines: stored, version: version, to: schema)
        } catch {
            throw ServerError(error.isDamaged ? .corrupt : .schemaMismatch, "the server's PostgreSQL schema \(schemaName): " + error.message)
        }
        if !changes.isEmpty {
            try await migrate(lines: stored, version: version, to: schema, changes: changes)
            try await recordLines()
            migrations = changes
        }
        if version != schema.version { _ = try await recordVersion() }
        olderSchemas = try await readOlderSchemas(below: schema.version)
    }
}
