import CSQLite

extension Database {
    /// Copies this database, as it stands at one moment, into `destination` with SQLite's
    /// online backup API: page by page in one pass that holds a read transaction, so
    /// writers on other connections go on meanwhile (in WAL mode) and the copy is one
    /// committed state. Whatever `destination` held is replaced.
    ///
    /// - Throws: ``SQLiteError`` when either connection is closed, or SQLite fails
    ///   (`SQLITE_BUSY` when `destination` is in use by another connection).
    public func backup(into destination: Database) throws(SQLiteError) {
        let source = try connection("backup")
        let target = try destination.connection("backup")
        guard let backup = sqlite3_backup_init(target, "main", source, "main") else {
            throw SQLiteError.from(target, code: sqlite3_errcode(target), sql: "backup")
        }
        let code = sqlite3_backup_step(backup, -1)
        let finished = sqlite3_backup_finish(backup)
        guard code == SQLITE_DONE else { throw SQLiteError.from(target, code: code, sql: "backup") }
        guard finished == SQLITE_OK else { throw SQLiteError.from(target, code: finished, sql: "backup") }
    }
}
