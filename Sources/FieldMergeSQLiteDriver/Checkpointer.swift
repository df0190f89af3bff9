/// Moves a store file's write-ahead log into the file on a connection and a thread of its
/// own, so that a commit never waits for that.
///
/// SQLite's connection that commits checkpoints itself once the log passes 1,000 pages: the
/// commit then also copies the pages and syncs the log and the file, which costs a large
/// write (a sync response) more than its own work. With a checkpointer the store's connection
/// checkpoints itself only past ``storeLimitPages`` (a safety net), and ``request()`` after
/// each commit does it in the background.
package actor Checkpointer {
    /// The log size, in pages, at which the store's own connection still checkpoints.
    package static let storeLimitPages = 16_384
    private let executor: DatabaseExecutor
    private let database: Database

    package nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    /// A checkpointer for the store file at `path`; ``leaveCheckpoints(of:)`` then makes the
    /// store's own connection leave checkpoints to it.
    package init(path: String) throws(SQLiteError) {
        var options = Database.Options()
        options.statementCacheLimit = 0
        database = try Database(.file(path: path), options: options)
        executor = DatabaseExecutor(label: "FieldMerge.Checkpointer")
    }

    /// A checkpointer for the file of `database`, whose connection then leaves checkpoints to
    /// it (``leaveCheckpoints(of:)``); nil for an in-memory database, or when the file cannot
    /// be opened a second time (the connection then checkpoints by itself, as SQLite does).
    package static func takingOver(_ database: Database) -> Checkpointer? {
        guard case .file(let path) = database.location, let checkpointer = try? Checkpointer(path: path) else { return nil }
        try? leaveCheckpoints(of: database)
        return checkpointer
    }

    /// Makes `store`, a connection to the checkpointer's file, checkpoint by itself only
    /// past ``storeLimitPages``.
    package static func leaveCheckpoints(of store: Database) throws(SQLiteError) {
        try store.execute("PRAGMA wal_autocheckpoint = \(storeLimitPages)")
    }

    /// Checkpoints soon, on the checkpointer's thread; returns at once.
    package nonisolated func request() {
        Task { await self.checkpoint() }
    }

    /// Checkpoints now (a failure is left for the next one, or the store's safety net);
    /// nothing once closed.
    package func checkpoint() {
        try? database.checkpoint()
    }

    /// Checkpoints a last time and closes the checkpointer's connection: requests still on
    /// their way then do nothing, and the file is left alone from here on.
    package func close() {
        try? database.checkpoint()
        database.close()
    }
}
