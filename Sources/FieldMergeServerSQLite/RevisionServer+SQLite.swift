import FieldMerge
import FieldMergeServer
import FieldMergeSQLiteDriver

/// The embedded server: a ``RevisionServer`` on a SQLite file (or a private in-memory
/// database), opened without suspending.
extension RevisionServer {
    /// A server on SQLite (the embedded default): a file, or a private in-memory database.
    ///
    /// - Parameter database: How to open it; `durableAcrossPowerLoss` makes every answered
    ///   request survive a power loss (each commit waits for the disk).
    /// - Throws: ``ServerError``, as `init(storage:schema:options:replica:wall:)`.
    public init(
        _ location: Database.Location = .memory, schema: Schema, options: Options = Options(),
        replica: ReplicaID = ReplicaID(0x5E_5E), wall: any WallClock = SystemWallClock(),
        database: Database.Options = Database.Options()
    ) throws(ServerError) {
        let storage = try SQLiteServerStorage(location, options: database)
        storage.probe = options.probe
        try storage.prepare(schema: schema)
        try self.init(
            prepared: storage, state: try storage.currentState(), schema: schema, options: options, replica: replica, wall: wall,
            migrations: storage.migrations, olderSchemas: storage.olderSchemas)
    }

    /// Runs `body` with the server's SQLite database, between requests (tests and tools that
    /// inspect it); nil when the storage is not SQLite.
    package func withSQLite<T: Sendable>(_ body: (Database) throws -> T) rethrows -> T? {
        guard let sqlite = unsafeStorage as? SQLiteServerStorage else { return nil }
        return try body(sqlite.database)
    }

    /// The SQLite database of a server on ``SQLiteServerStorage``, for tests that inspect or
    /// seed it while no request is in flight. Not for concurrent use.
    package nonisolated var database: Database {
        guard let sqlite = unsafeStorage as? SQLiteServerStorage else { preconditionFailure("the server's storage is not SQLite") }
        return sqlite.database
    }
}
