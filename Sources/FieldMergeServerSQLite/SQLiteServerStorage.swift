import FieldMerge
import FieldMergeProtocol
import FieldMergeSQLiteDriver
import FieldMergeServer

/// ``ServerStorage`` on SQLite: the embedded default for `fieldmerge serve`, tests and
/// `fieldmerge simulate`.
///
/// One table per entity with typed columns (queryable with plain SQL), the field stamps, the
/// revision of the last change, the revision that created the record and the per-field
/// revisions merge mode needs (`__fm_fields`, NULL while every field changed at the record's
/// revision); `__fm_deleted` keeps tombstones, `__fm_log` the latest revision of every
/// record, `__fm_replies` each client's last answer (with its owner, time and request digest), `__fm_schema` the schema the file was
/// made for. One connection, used by one server at a time: a file serves one process.
public final class SQLiteServerStorage: ServerStorage {
    let database: Database
    private let checkpointer: Checkpointer?
    private(set) var tables: [SQLiteServerTable] = []
    private var savepoints = 0
    /// The entities with log entries in the window catch-up read last, each with whether any
    /// of them is a deletion: one walk of the window instead of two per entity. Kept only
    /// within one transaction and forgotten by any write.
    var windowEntities: (after: Int64, through: Int64, names: [String: Bool])?
    /// What opening the storage changed in its file to move it to a newer schema version.
    public private(set) var migrations: [SchemaChange] = []
    /// The older schema versions this file was migrated from, whose clients it still answers.
    public internal(set) var olderSchemas: [OlderSchema] = []
    /// Hears the time of each log write (``SyncPhase/log``); nil times nothing.
    public var probe: (any SyncProbe)?
    /// Whether write requests that queue behind each other are answered in one transaction
    /// (Specs/http.md §8, "Writes in groups"): only when every commit waits for the disk's
    /// flush (`durableAcrossPowerLoss`), which a group then pays once. Otherwise a commit
    /// costs next to nothing and each request keeps its own.
    public let groupsWrites: Bool

    /// Opens (or creates) the database at `location`.
    ///
    /// - Throws: ``ServerError/Code/storage`` when SQLite cannot open it.
    public init(_ location: Database.Location = .memory, options: Database.Options = Database.Options()) throws(ServerError) {
        database = try Self.sqlite { () throws(SQLiteError) in try Database(location, options: options) }
        groupsWrites = options.durableAcrossPowerLoss && !options.readOnly
        // A file's log is moved into it on a thread of its own after each write, not by the
        // commit of whichever request passes 1,000 pages (which then also waits for the sync).
        checkpointer = options.readOnly || !options.walMode ? nil : Checkpointer.takingOver(database)
    }

    public nonisolated(nonsending) func open(schema: Schema) async throws { try prepare(schema: schema) }

    /// Closes the connection (its cached statements are finalized) and then the
    /// checkpointer's, the file's last: SQLite then moves the write-ahead log into the file
    /// and removes it and the shared-memory file. Idempotent.
    public nonisolated(nonsending) func close() async {
        database.close()
        await checkpointer?.close()
    }

    /// Creates the tables on a new file, or checks that an existing one was made for `schema`.
    func prepare(schema: Schema) throws(ServerError) {
        tables = schema.entities.map(SQLiteServerTable.init)
        try Self.sqlite { () throws(SQLiteError) in
            guard try database.scalar("SELECT count(*) FROM sqlite_master WHERE name = '__fm_server'") != .integer(1) else { return }
            let script = Self.metadataTables + tables.map(\.createTable).joined(separator: ";\n")
            do throws(SQLiteError) {
                try database.execute("BEGIN IMMEDIATE;\n" + script + ";\nCOMMIT")
            } catch {
                if database.isInTransaction { try? database.execute("ROLLBACK") }
                throw error
            }
        }
        migrations = try checkSchema(schema)
        try Self.sqlite { () throws(SQLiteError) in
            // The log has one index besides its key: by revision, which catch-up walks one
            // window at a time. Files made before kept a second one, by entity and revision,
            // which every write paid for (an entry deleted somewhere in the middle and one
            // added at the end) and nothing needs: it goes.
            try database.execute("DROP INDEX IF EXISTS \"__fm_log_entity\"")
            try prepareRoots(schema)
            try prepareReplies()
            try database.execute(SQLiteCompaction.marks)
            // Deletes find children.
            for entity in schema.entities {
                for index in entity.referenceIndexes { try database.execute(index) }
            }
        }
        _ = try currentState()
    }

    private static let metadataTables = """
        CREATE TABLE "__fm_server" ("key" TEXT PRIMARY KEY, "value" INTEGER NOT NULL);
        INSERT INTO "__fm_server" VALUES ('maxRevision', 0), ('clock', 0);
        CREATE TABLE "__fm_ids" ("entity" TEXT PRIMARY KEY, "next" INTEGER NOT NULL);
        CREATE TABLE "__fm_deleted" ("entity" TEXT NOT NULL, "id" INTEGER NOT NULL,
          "revision" INTEGER NOT NULL, "stamp" BLOB NOT NULL, "root" INTEGER, PRIMARY KEY ("entity", "id")) WITHOUT ROWID;
        CREATE TABLE "__fm_log" ("entity" TEXT NOT NULL, "id" INTEGER NOT NULL,
          "revision" INTEGER NOT NULL, PRIMARY KEY ("entity", "id")) WITHOUT ROWID;
        CREATE INDEX "__fm_log_revision" ON "__fm_log" ("revision", "entity", "id");
        CREATE TABLE "__fm_replies" ("client" TEXT PRIMARY KEY, "request" TEXT NOT NULL, "response" BLOB NOT NULL,
          "owner" TEXT NOT NULL DEFAULT '', "stored" INTEGER NOT NULL DEFAULT 0, "digest" INTEGER);

        """

    /// The state as stored, outside any request.
    func currentState() throws(ServerError) -> ServerState {
        let values = try Self.sqlite { () throws(SQLiteError) in
            (try database.scalar("SELECT value FROM __fm_server WHERE key = 'maxRevision'"),
             try database.scalar("SELECT value FROM __fm_server WHERE key = 'clock'"),
             try SQLiteCompaction.horizon(database))
        }
        guard case .integer(let revision)? = values.0, case .integer(let clock)? = values.1 else {
            throw ServerError(.corrupt, "the server's state (__fm_server) is damaged")
        }
        return ServerState(maxRevision: revision, clock: UInt64(bitPattern: clock), horizon: values.2)
    }

    static func sqlite<T>(_ body: () throws(SQLiteError) -> T) throws(ServerError) -> T {
        do { return try body() } catch {
            if error.isCorrupt { throw ServerError(.corrupt, error.description, cause: error) }
            throw ServerError(.storage, error.description, cause: error)
        }
    }

    func table(_ entity: ServerEntity) -> SQLiteServerTable { tables[entity.position] }

    // MARK: Transactions

    public nonisolated(nonsending) func write<T>(_ body: nonisolated(nonsending) () async throws -> T) async throws -> T {
        try await transaction(writing: true, body)
    }

    public nonisolated(nonsending) func read<T>(_ body: nonisolated(nonsending) () async throws -> T) async throws -> T {
        try await transaction(writing: false, body)
    }

    private nonisolated(nonsending) func transaction<T>(writing: Bool, _ body: nonisolated(nonsending) () async throws -> T) async throws -> T {
        try database.execute(writing ? "BEGIN IMMEDIATE" : "BEGIN DEFERRED")
        windowEntities = nil
        defer { windowEntities = nil }
        let result: T
        do {
            result = try await body()
            try probe.measure(.serverCommit) { () throws(SQLiteError) in try database.execute("COMMIT") }
            if writing { checkpointer?.request() }
        } catch {
            if database.isInTransaction { try? database.execute("ROLLBACK") }
            throw error
        }
        return result
    }

    public nonisolated(nonsending) func savepoint<T>(_ body: nonisolated(nonsending) () async throws -> T) async throws -> T {
        savepoints += 1
        let name = "\"fm_change_set_\(savepoints)\""
        defer { savepoints -= 1 }
        try database.execute("SAVEPOINT \(name)")
        do {
            let result = try await body()
            try database.execute("RELEASE \(name)")
            return result
        } catch {
            try? database.execute("ROLLBACK TO \(name)")
            try? database.execute("RELEASE \(name)")
            throw error
        }
    }

    // MARK: State, ids

    public nonisolated(nonsending) func state() async throws -> ServerState { try currentState() }

    public nonisolated(nonsending) func saveState(_ state: ServerState) async throws {
        let sql = "UPDATE \"__fm_server\" SET \"value\" = ? WHERE \"key\" = ?"
        try database.run(sql, [.integer(state.maxRevision), .text("maxRevision")])
        try database.run(sql, [.integer(Int64(bitPattern: state.clock)), .text("clock")])
    }

    public nonisolated(nonsending) func nextID(_ entity: ServerEntity) async throws -> Int64 {
        // The counter, or (none yet) after the largest id alive or deleted: an id a tombstone
        // remembers is never given again.
        let next = try SQLiteCompaction.idBound(database, entity: entity.name)
        try database.run("INSERT OR REPLACE INTO \"__fm_ids\" VALUES (?, ?)", [.text(entity.name), .integer(next + 1)])
        return next
    }
}
