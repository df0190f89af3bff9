import CSQLite

/// An error reported by SQLite, or by this module's thin layer over it.
///
/// Like GRDB's `DatabaseError`, it is a struct with a code and context rather than an enum,
/// so new situations need no new cases.
///
/// ```swift
/// do {
///     try db.run("INSERT INTO item(name) VALUES (?)", [.text("a")])
/// } catch where error.isConstraint {
///     print(error) // SQLite error 2067 (UNIQUE constraint failed: item.name) in `INSERT ...`
/// }
/// ```
public struct SQLiteError: Error, Equatable, Sendable, CustomStringConvertible {
    /// SQLite's extended result code, such as 2067 (`SQLITE_CONSTRAINT_UNIQUE`).
    ///
    /// The primary result code is `code & 0xff`.
    public var code: Int32
    /// The message of `sqlite3_errmsg`, or this module's own explanation.
    public var message: String
    /// The SQL that failed, when there is one.
    public var sql: String?

    /// Creates an error.
    ///
    /// - Parameters:
    ///   - code: An extended (or primary) SQLite result code.
    ///   - message: What went wrong.
    ///   - sql: The statement that failed, if any.
    public init(code: Int32, message: String, sql: String? = nil) {
        self.code = code
        self.message = message
        self.sql = sql
    }

    /// The primary result code: the low eight bits of ``code``.
    var primaryCode: Int32 { code & 0xff }

    /// Whether another connection holds a lock that this one needed
    /// (`SQLITE_BUSY` or `SQLITE_LOCKED`, including their extended codes).
    ///
    /// Such an operation may succeed when retried later.
    public var isBusy: Bool { primaryCode == SQLITE_BUSY || primaryCode == SQLITE_LOCKED }

    /// Whether a write was attempted on a read-only database (`SQLITE_READONLY` family).
    public var isReadOnly: Bool { primaryCode == SQLITE_READONLY }

    /// Whether a constraint failed: `UNIQUE`, `NOT NULL`, `CHECK`, `FOREIGN KEY`, primary key
    /// (`SQLITE_CONSTRAINT` family).
    public var isConstraint: Bool { primaryCode == SQLITE_CONSTRAINT }

    /// Whether the database file is damaged or not a database (`SQLITE_CORRUPT`,
    /// `SQLITE_NOTADB`), or this module's own metadata cannot be read back.
    public var isCorrupt: Bool { primaryCode == SQLITE_CORRUPT || primaryCode == SQLITE_NOTADB }

    /// A one-line summary: `SQLite error <code> (<message>) in `<sql>``.
    public var description: String {
        var text = "SQLite error \(code) (\(message))"
        if let sql { text += " in `\(sql)`" }
        return text
    }
}

extension SQLiteError {
    /// The error of a connection after a failed call, with `sqlite3_errmsg`'s text.
    static func from(_ db: OpaquePointer?, code: Int32, sql: String?) -> SQLiteError {
        let message = db.flatMap { sqlite3_errmsg($0) }.map { String(cString: $0) }
            ?? String(cString: sqlite3_errstr(code))
        return SQLiteError(code: code, message: message, sql: sql)
    }

    /// The error of any call on a connection that ``Database/close()`` has closed.
    static func closed(sql: String?) -> SQLiteError {
        SQLiteError(code: SQLITE_MISUSE, message: "the database connection is closed", sql: sql)
    }
}
