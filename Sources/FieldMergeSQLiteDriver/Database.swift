import CSQLite

/// One SQLite connection, with a cache of prepared statements.
///
/// ```swift
/// let db = try Database(.file(path: "/tmp/app.sqlite"))
/// try db.execute("CREATE TABLE IF NOT EXISTS item(id INTEGER PRIMARY KEY, name TEXT NOT NULL)")
/// try db.transaction {
///     try db.run("INSERT INTO item(name) VALUES (?)", [.text("Buy milk")])
/// }
/// let count = try db.scalar("SELECT count(*) FROM item") // .integer(1)
/// ```
///
/// The connection is opened in SQLite's multi-thread mode (`SQLITE_OPEN_NOMUTEX`): it is not
/// `Sendable` and must be used by one actor or task at a time. Foreign keys are enforced;
/// file databases use write-ahead logging with `synchronous = NORMAL` unless the options say
/// otherwise. Values are always bound, never spliced into SQL. The connection closes when the
/// database is deallocated, or earlier with ``close()``.
public final class Database {
    /// Where the database lives.
    public enum Location: Sendable {
        /// A private, temporary in-memory database.
        case memory
        /// A database file, created if it does not exist (unless opened read-only).
        case file(path: String)
    }

    /// How to open a connection.
    public struct Options: Sendable {
        /// Open without write access; the file must exist.
        public var readOnly = false
        /// How long to wait for another connection's lock before failing with a busy error.
        public var busyTimeoutMilliseconds: Int32 = 5_000
        /// Put file databases in write-ahead-log mode, with `synchronous = NORMAL` (or FULL,
        /// see ``durableAcrossPowerLoss``).
        public var walMode = true
        /// `synchronous = FULL`: every commit is synced to the disk before it returns, so a
        /// committed transaction survives a power loss or an OS crash, not only a crash of the
        /// process (which `NORMAL` in WAL mode already survives). Each commit then waits for
        /// the disk's flush. Off by default.
        public var durableAcrossPowerLoss = false
        /// How many prepared statements to keep, least recently used evicted first (0: none).
        public var statementCacheLimit = 64
        /// SQLite's page cache, in KiB (SQLite's own default is 2,000). Six-figure tables
        /// outgrow 2 MB at once, and every apply then rereads index pages from the file.
        public var pageCacheKiB = 32_768

        /// The defaults: read-write, 5 s busy timeout, WAL, 64 cached statements, 32 MiB of
        /// page cache.
        public init() {}
    }

    /// Where the database lives.
    public let location: Location
    /// The `sqlite3` connection; nil once closed.
    private var handle: OpaquePointer?
    private let cacheLimit: Int
    private var cache: [String: Statement] = [:]
    private var useCounter: UInt64 = 0
    /// When set, the SQL of every statement the cache hands out, in order: what tests count
    /// to pin down how many statements an operation costs (``execute(_:)``'s are not in it).
    package var statementsRun: [String]?

    /// Opens a connection.
    ///
    /// - Parameters:
    ///   - location: An in-memory database (the default) or a file.
    ///   - options: Read-only, busy timeout, journal mode and statement cache size.
    /// - Throws: ``SQLiteError`` when SQLite cannot open or configure the database.
    public init(_ location: Location = .memory, options: Options = Options()) throws(SQLiteError) {
        self.location = location
        self.cacheLimit = max(0, options.statementCacheLimit)
        self.handle = try Self.open(location, options: options)
    }

    deinit { close() }

    /// Process-wide set-up, once, before the first connection initialises SQLite.
    private static let configured: Bool = csqlite_disable_memstatus() == SQLITE_OK

    private static func open(_ location: Location, options: Options) throws(SQLiteError) -> OpaquePointer {
        _ = configured
        var flags = SQLITE_OPEN_NOMUTEX
        flags |= options.readOnly ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)
        let path: String
        switch location {
        case .memory: path = ":memory:"
        case let .file(filePath): path = filePath
        }
        var connection: OpaquePointer?
        let code = sqlite3_open_v2(path, &connection, flags, nil)
        guard let db = connection else {
            throw SQLiteError(code: code, message: "cannot open \(path): out of memory")
        }
        do throws(SQLiteError) {
            guard code == SQLITE_OK else { throw SQLiteError.from(db, code: code, sql: nil) }
            sqlite3_extended_result_codes(db, 1)
            sqlite3_busy_timeout(db, options.busyTimeoutMilliseconds)
            try exec(db, "PRAGMA foreign_keys = ON")
            try exec(db, "PRAGMA cache_size = -\(max(0, options.pageCacheKiB))")
            if case .file = location, !options.readOnly, options.walMode {
                try exec(db, "PRAGMA journal_mode = WAL")
                try exec(db, options.durableAcrossPowerLoss ? "PRAGMA synchronous = FULL" : "PRAGMA synchronous = NORMAL")
            }
            return db
        } catch {
            sqlite3_close_v2(db)
            throw error
        }
    }

    /// Runs SQL without parameters through `sqlite3_exec`.
    private static func exec(_ db: OpaquePointer, _ sql: String) throws(SQLiteError) {
        var message: UnsafeMutablePointer<CChar>?
        let code = sqlite3_exec(db, sql, nil, nil, &message)
        guard code != SQLITE_OK else { return }
        defer { sqlite3_free(message) }
        if let message { throw SQLiteError(code: code, message: String(cString: message), sql: sql) }
        throw SQLiteError.from(db, code: code, sql: sql)
    }

    func connection(_ sql: String?) throws(SQLiteError) -> OpaquePointer {
        guard let handle else { throw SQLiteError.closed(sql: sql) }
        return handle
    }

    /// Turns this connection's triggers off (`false`) or on again. Other connections to the
    /// same file keep theirs, and SQLite's foreign key actions are not triggers: they still
    /// run. Not undone by a rollback. Prepared statements are prepared again on their next
    /// step (SQLite does it by itself).
    package func setTriggersEnabled(_ enabled: Bool) throws(SQLiteError) {
        let sql = enabled ? "-- triggers on" : "-- triggers off"
        let db = try connection(sql)
        let code = csqlite_enable_triggers(db, enabled ? 1 : 0)
        guard code == SQLITE_OK else { throw SQLiteError.from(db, code: code, sql: sql) }
    }

    /// Whether the main database has a table `name` (a view is none), matched as SQLite matches
    /// table names (ASCII letters in either case), as the connection's schema stands inside
    /// its current transaction: a lookup in the schema SQLite holds in memory
    /// (`sqlite3_table_column_metadata`), where a query of `sqlite_master` reads every row of
    /// the schema (a store's tables, indexes and triggers, with their SQL). A name with a NUL
    /// names no table (SQLite would read it only up to the NUL).
    ///
    /// - Throws: ``SQLiteError`` when the schema cannot be read (a closed connection, a
    ///   locked or damaged file).
    public func hasTable(_ name: String) throws(SQLiteError) -> Bool {
        let sql = "-- has table"
        let db = try connection(sql)
        guard !name.utf8.contains(0) else { return false }
        let code = sqlite3_table_column_metadata(db, "main", name, nil, nil, nil, nil, nil, nil)
        switch code {
        case SQLITE_OK: return true
        case SQLITE_ERROR: return false  // no such table
        default: throw SQLiteError.from(db, code: code, sql: sql)
        }
    }

    // MARK: Running SQL

    /// Runs one or more SQL statements separated by semicolons, without parameters.
    ///
    /// Use it for schema changes and pragmas; use ``run(_:_:)`` for anything with values.
    public func execute(_ sql: String) throws(SQLiteError) {
        try Self.exec(connection(sql), sql)
    }

    /// The prepared statement for one SQL statement, from the cache when it was seen before.
    ///
    /// The statement comes back reset, with all parameters `NULL`. The cache keeps the
    /// ``Options/statementCacheLimit`` most recently used statements; an evicted statement
    /// stays valid for as long as the caller holds it.
    ///
    /// - Throws: ``SQLiteError`` on a syntax error, or when `sql` holds more than one statement.
    /// - Complexity: O(1) for a cached statement; a miss prepares and may scan the cache to evict.
    public func statement(_ sql: String) throws(SQLiteError) -> Statement {
        useCounter &+= 1
        statementsRun?.append(sql)
        if let cached = cache[sql] {
            cached.lastUse = useCounter
            cached.reset()
            return cached
        }
        let statement = try prepare(sql)
        guard cacheLimit > 0 else { return statement }
        if cache.count >= cacheLimit, let oldest = cache.min(by: { $0.value.lastUse < $1.value.lastUse }) {
            cache.removeValue(forKey: oldest.key)
        }
        statement.lastUse = useCounter
        cache[sql] = statement
        return statement
    }

    /// Prepares `sql` without the cache; it must be exactly one statement.
    private func prepare(_ sql: String) throws(SQLiteError) -> Statement {
        let db = try connection(sql)
        let flags = UInt32(SQLITE_PREPARE_PERSISTENT)
        var prepared: OpaquePointer?
        let multiple: Int32 = -1
        let result: Int32 = sql.withCString { text in
            let length = sql.utf8.count
            var tail: UnsafePointer<CChar>?
            let code = sqlite3_prepare_v3(db, text, Int32(clamping: length + 1), flags, &prepared, &tail)
            guard code == SQLITE_OK, prepared != nil, let tail else { return code }
            // Anything after the first statement must be whitespace or comments.
            let rest = text + length - tail
            guard rest > 0 else { return code }
            var extra: OpaquePointer?
            let extraCode = sqlite3_prepare_v3(db, tail, Int32(clamping: rest), 0, &extra, nil)
            guard extra != nil || extraCode != SQLITE_OK else { return code }
            sqlite3_finalize(extra)
            return multiple
        }
        guard result == SQLITE_OK, let prepared else {
            sqlite3_finalize(prepared)
            if result == multiple {
                throw SQLiteError(
                    code: SQLITE_MISUSE, message: "more than one statement; use execute(_:) for several", sql: sql)
            }
            if result == SQLITE_OK {
                throw SQLiteError(code: SQLITE_MISUSE, message: "no SQL statement", sql: sql)
            }
            throw SQLiteError.from(db, code: result, sql: sql)
        }
        return Statement(handle: prepared, sql: sql)
    }

    /// Runs one statement with `bindings` to completion, through the statement cache.
    ///
    /// - Parameters:
    ///   - sql: One SQL statement with `?` parameters.
    ///   - bindings: One value per parameter, in order.
    public func run(_ sql: String, _ bindings: [SQLValue] = []) throws(SQLiteError) {
        let statement = try statement(sql)
        try statement.bind(bindings)
        try statement.execute()
    }

    /// All rows of a query, each an array of its column values.
    public func rows(_ sql: String, _ bindings: [SQLValue] = []) throws(SQLiteError) -> [[SQLValue]] {
        let statement = try statement(sql)
        defer { statement.reset() }
        try statement.bind(bindings)
        let columns = statement.columnCount
        var rows: [[SQLValue]] = []
        while try statement.step() {
            var row: [SQLValue] = []
            row.reserveCapacity(Int(columns))
            for column in 0..<columns { row.append(statement.value(column)) }
            rows.append(row)
        }
        return rows
    }

    /// The rows of a query with its column names: for tools and apps that read tables they
    /// did not declare (`SELECT *`).
    ///
    /// ```swift
    /// let result = try db.namedRows("SELECT id, name AS title FROM item")
    /// let columns = result.columns   // ["id", "title"]
    /// let rows = result.rows         // [[.integer(1), .text("Buy milk")]]
    /// ```
    public func namedRows(_ sql: String, _ bindings: [SQLValue] = []) throws(SQLiteError) -> (columns: [String], rows: [[SQLValue]]) {
        let names = try statement(sql).columnNames
        return (names, try rows(sql, bindings))
    }

    /// The first column of the first row of a query, or nil when there is no row.
    public func scalar(_ sql: String, _ bindings: [SQLValue] = []) throws(SQLiteError) -> SQLValue? {
        let statement = try statement(sql)
        defer { statement.reset() }
        try statement.bind(bindings)
        return try statement.step() ? statement.value(0) : nil
    }

    // MARK: State

    /// Copies what the write-ahead log holds into the database file, as far as no reader
    /// still needs it, without waiting for readers or writers (a `PASSIVE` checkpoint). A
    /// checkpoint already running elsewhere is no error: there is nothing to do then.
    public func checkpoint() throws(SQLiteError) {
        let db = try connection(nil)
        let code = sqlite3_wal_checkpoint_v2(db, nil, SQLITE_CHECKPOINT_PASSIVE, nil, nil)
        guard code == SQLITE_OK || code == SQLITE_BUSY else { throw SQLiteError.from(db, code: code, sql: nil) }
    }

    /// The most memory SQLite's page cache of this connection may hold, in KiB
    /// (`PRAGMA cache_size`, negative). Lowering it frees the pages beyond the new limit
    /// that no statement uses; it may be changed at any time, inside a transaction too.
    public var pageCacheKiB: Int {
        get throws(SQLiteError) {
            guard case let .integer(value)? = try scalar("PRAGMA cache_size") else { return 0 }
            // A positive cache_size counts pages, a negative one KiB.
            if value >= 0, case let .integer(pageSize)? = try scalar("PRAGMA page_size") { return Int(value * pageSize / 1024) }
            return Int(-value)
        }
    }

    /// Sets ``pageCacheKiB``.
    public func setPageCacheKiB(_ kib: Int) throws(SQLiteError) {
        try execute("PRAGMA cache_size = -\(max(0, kib))")
    }

    /// The number of rows the last `INSERT`, `UPDATE` or `DELETE` changed (`sqlite3_changes64`).
    public var changes: Int { handle.map { Int(sqlite3_changes64($0)) } ?? 0 }

    /// The number of rows every `INSERT`, `UPDATE` and `DELETE` on this connection changed
    /// since it opened (`sqlite3_total_changes64`): whether some work wrote anything.
    public var totalChanges: Int { handle.map { Int(sqlite3_total_changes64($0)) } ?? 0 }

    /// The rowid of the last successful `INSERT` on this connection.
    public var lastInsertRowID: Int64 { handle.map { sqlite3_last_insert_rowid($0) } ?? 0 }

    /// Whether a transaction is open (the connection is not in autocommit mode).
    public var isInTransaction: Bool { handle.map { sqlite3_get_autocommit($0) == 0 } ?? false }

    /// Drops the statement cache and closes the connection; later calls throw. Idempotent.
    ///
    /// Cached statements are finalized unless a caller still holds one; the connection is then
    /// closed lazily (`sqlite3_close_v2`) once that statement is released.
    public func close() {
        guard let handle else { return }
        cache.removeAll()
        sqlite3_close_v2(handle)
        self.handle = nil
    }

    /// Quotes an identifier for SQL: wraps it in double quotes and doubles the quotes inside.
    ///
    /// `Database.quote("a\"b")` is `"a""b"`. Identifiers containing NUL are a programming
    /// error (precondition).
    public static func quote(_ identifier: String) -> String {
        precondition(!identifier.utf8.contains(0), "an SQL identifier cannot contain NUL")
        var quoted = "\""
        quoted.reserveCapacity(identifier.utf8.count + 2)
        for character in identifier.unicodeScalars {
            if character == "\"" { quoted.unicodeScalars.append("\"") }
            quoted.unicodeScalars.append(character)
        }
        quoted.unicodeScalars.append("\"")
        return quoted
    }
}

@available(*, unavailable)
extension Database: Sendable {}
