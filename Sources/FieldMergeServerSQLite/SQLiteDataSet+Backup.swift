import FieldMerge
import FieldMergeSQLiteDriver
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension SQLiteDataSet {
    /// Copies the data set at `path` into a new file `copy` while servers keep serving it
    /// (SQLite's online backup API: one committed state, writers not held up in WAL mode),
    /// then checks the copy (`PRAGMA integrity_check`, and its recorded schema).
    ///
    /// - Returns: What the copy holds.
    /// - Throws: ``SQLiteDataSetError`` when `copy` already exists (nothing is overwritten),
    ///   `path` is not a data set, or the copy fails its check (the copy is then removed).
    @discardableResult
    public static func backup(path: String, to copy: String) throws(SQLiteDataSetError) -> SQLiteDataSetStats {
        guard access(copy, F_OK) != 0 else { throw SQLiteDataSetError("\(copy) exists; a backup never overwrites a file") }
        let source = try open(path)
        defer { source.close() }
        _ = try describe(path) { () throws(SQLiteError) in try recordedOutline(source, path) }
        try copyPages(from: source, named: path, to: copy)
        return try stats(path: copy)
    }

    /// Puts the backup `copy` in place as the data set at `path`, after checking it. The
    /// servers of `path` must be stopped: a server holding the file open would go on from
    /// what it read before.
    ///
    /// - Parameter replacing: Whether an existing data set at `path` may be replaced.
    /// - Returns: What the restored data set holds.
    /// - Throws: ``SQLiteDataSetError`` when `copy` is not a sound data set, `path` exists
    ///   without `replacing`, or `path` has a write-ahead log (a server may have it open, or
    ///   stopped without closing it: open it once with a server and stop it cleanly first).
    @discardableResult
    public static func restore(from copy: String, to path: String, replacing: Bool) throws(SQLiteDataSetError) -> SQLiteDataSetStats {
        let backup = try open(copy)
        defer { backup.close() }
        try check(backup, copy)
        if access(path, F_OK) == 0 {
            guard replacing else { throw SQLiteDataSetError("\(path) exists; restore with --replace to put the backup in its place") }
            for suffix in ["-wal", "-journal"] where access(path + suffix, F_OK) == 0 {
                throw SQLiteDataSetError(
                    "\(path)\(suffix) exists: a server may have \(path) open, or one stopped without closing it; stop it cleanly first")
            }
        }
        try copyPages(from: backup, named: copy, to: path)
        return try stats(path: path)
    }

    /// Writes every page of `source` into `target` (created when missing), checks the result,
    /// and removes a target it created when anything fails.
    private static func copyPages(from source: Database, named name: String, to target: String) throws(SQLiteDataSetError) {
        let created = access(target, F_OK) != 0
        do throws(SQLiteDataSetError) {
            let destination = try openOrCreate(target)
            defer { destination.close() }
            do {
                try source.backup(into: destination)
            } catch {
                throw SQLiteDataSetError("cannot copy \(name) into \(target): \(error)")
            }
            try check(destination, target)
        } catch {
            if created { for suffix in ["", "-wal", "-shm", "-journal"] { unlink(target + suffix) } }
            throw error
        }
    }

    private static func openOrCreate(_ path: String) throws(SQLiteDataSetError) -> Database {
        do {
            return try Database(.file(path: path))
        } catch {
            throw SQLiteDataSetError("cannot open \(path): \(error)")
        }
    }

    /// A sound SQLite file that records a server's schema.
    private static func check(_ database: Database, _ path: String) throws(SQLiteDataSetError) {
        try describe(path) { () throws(SQLiteError) in
            let verdict = try database.rows("PRAGMA integrity_check").compactMap { row -> String? in
                if case .text(let line)? = row.first { return line }
                return nil
            }
            guard verdict == ["ok"] else {
                throw SQLiteError(code: 11, message: "\(path) fails its integrity check: \(verdict.prefix(3).joined(separator: "; "))")
            }
            _ = try recordedOutline(database, path)
        }
    }
}
