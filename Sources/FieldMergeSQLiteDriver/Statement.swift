import CSQLite

/// A prepared SQL statement: bind parameters, step through rows, read columns.
///
/// Statements come from ``Database/statement(_:)``, which caches them by SQL text, so a
/// statement is prepared once and reused: bind, ``execute()``, bind again.
///
/// ```swift
/// let insert = try db.statement("INSERT INTO item(id, name) VALUES (?, ?)")
/// for (id, name) in items {
///     try insert.bind(id, at: 1)
///     try insert.bind(name, at: 2)
///     try insert.execute()
/// }
/// ```
///
/// Typed binds of `Int64` and `Double` allocate nothing; text and blobs are copied by
/// SQLite (`SQLITE_TRANSIENT`), so the caller's buffers need not outlive the call.
///
/// A statement belongs to one connection and is not `Sendable`. The same SQL yields the same
/// cached object, so do not ask for a statement's SQL again while you are still stepping it.
/// Column readers take 0-based indexes; parameter binds take 1-based ones, as in SQLite.
public final class Statement {
    /// The SQL text the statement was prepared from.
    public let sql: String
    /// The `sqlite3_stmt`, finalized when the statement is deallocated.
    let handle: OpaquePointer
    /// When the cache last handed this statement out (for least-recently-used eviction).
    var lastUse: UInt64 = 0

    init(handle: OpaquePointer, sql: String) {
        self.handle = handle
        self.sql = sql
    }

    deinit { sqlite3_finalize(handle) }

    /// The error for a failed call on this statement, with the connection's message.
    @inline(never)
    func error(_ code: Int32) -> SQLiteError {
        SQLiteError.from(sqlite3_db_handle(handle), code: code, sql: sql)
    }

    @inline(__always)
    func check(_ code: Int32) throws(SQLiteError) {
        if code != SQLITE_OK { throw error(code) }
    }

    // MARK: Binding

    /// Resets the statement to its start and sets every parameter back to `NULL`.
    public func reset() {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
    }

    /// Binds a value to a parameter.
    ///
    /// - Parameters:
    ///   - value: The value; ``SQLValue/blob(_:)`` with no bytes binds an empty blob.
    ///   - index: The 1-based parameter index.
    /// - Throws: ``SQLiteError`` with `SQLITE_RANGE` (25) when the index is out of range.
    public func bind(_ value: SQLValue, at index: Int32) throws(SQLiteError) {
        switch value {
        case .null: try bindNull(at: index)
        case let .integer(value): try bind(value, at: index)
        case let .real(value): try bind(value, at: index)
        case let .text(value): try bind(value, at: index)
        case let .blob(value): try bind(value, at: index)
        }
    }

    /// Binds an integer to the 1-based parameter `index`.
    public func bind(_ value: Int64, at index: Int32) throws(SQLiteError) {
        try check(sqlite3_bind_int64(handle, index, value))
    }

    /// Binds a double to the 1-based parameter `index`. SQLite stores NaN as `NULL`.
    public func bind(_ value: Double, at index: Int32) throws(SQLiteError) {
        try check(sqlite3_bind_double(handle, index, value))
    }

    /// Binds text to the 1-based parameter `index`, all of its UTF-8 bytes including any NUL.
    public func bind(_ value: String, at index: Int32) throws(SQLiteError) {
        let code = value.utf8.withContiguousStorageIfAvailable { bytes in
            bindText(UnsafeRawBufferPointer(bytes), at: index)
        } ?? {
            var copy = value
            return copy.withUTF8 { bindText(UnsafeRawBufferPointer($0), at: index) }
        }()
        try check(code)
    }

    private func bindText(_ bytes: UnsafeRawBufferPointer, at index: Int32) -> Int32 {
        guard let start = bytes.baseAddress, !bytes.isEmpty else {
            // A nil pointer would bind NULL; the empty string must stay text.
            return sqlite3_bind_text64(handle, index, "", 0, csqlite_transient(), UInt8(SQLITE_UTF8))
        }
        return sqlite3_bind_text64(
            handle, index, start.assumingMemoryBound(to: CChar.self), sqlite3_uint64(bytes.count),
            csqlite_transient(), UInt8(SQLITE_UTF8))
    }

    /// Binds a blob to the 1-based parameter `index`, copying the bytes.
    ///
    /// An empty buffer binds an empty blob (`zeroblob(0)`), not `NULL`.
    public func bind(bytes: UnsafeRawBufferPointer, at index: Int32) throws(SQLiteError) {
        guard let start = bytes.baseAddress, !bytes.isEmpty else {
            return try check(sqlite3_bind_zeroblob(handle, index, 0))
        }
        try check(sqlite3_bind_blob64(handle, index, start, sqlite3_uint64(bytes.count), csqlite_transient()))
    }

    /// Binds a blob to the 1-based parameter `index`; an empty array binds an empty blob.
    public func bind(_ bytes: [UInt8], at index: Int32) throws(SQLiteError) {
        let code = bytes.withUnsafeBytes { buffer in
            guard let start = buffer.baseAddress, !buffer.isEmpty else {
                return sqlite3_bind_zeroblob(handle, index, 0)
            }
            return sqlite3_bind_blob64(handle, index, start, sqlite3_uint64(buffer.count), csqlite_transient())
        }
        try check(code)
    }

    /// Binds `NULL` to the 1-based parameter `index`.
    public func bindNull(at index: Int32) throws(SQLiteError) {
        try check(sqlite3_bind_null(handle, index))
    }

    /// Binds `values` to parameters 1 through `values.count`.
    ///
    /// - Throws: ``SQLiteError`` with `SQLITE_RANGE` when the count differs from the
    ///   statement's number of parameters.
    public func bind(_ values: [SQLValue]) throws(SQLiteError) {
        let expected = sqlite3_bind_parameter_count(handle)
        guard values.count == Int(expected) else {
            throw SQLiteError(
                code: SQLITE_RANGE, message: "expected \(expected) bindings, got \(values.count)", sql: sql)
        }
        for (offset, value) in values.enumerated() {
            try bind(value, at: Int32(offset + 1))
        }
    }

    // MARK: Stepping

    /// Advances to the next row.
    ///
    /// - Returns: `true` when a row is ready to read, `false` when the statement is done.
    /// - Throws: ``SQLiteError`` with the extended code; the statement is then reset
    ///   (its bindings kept), so its locks are released.
    public func step() throws(SQLiteError) -> Bool {
        let code = sqlite3_step(handle)
        if code == SQLITE_ROW { return true }
        if code == SQLITE_DONE { return false }
        let failure = error(code)
        sqlite3_reset(handle)
        throw failure
    }

    /// Steps until done, discarding any rows, then resets and clears the bindings.
    public func execute() throws(SQLiteError) {
        defer { reset() }
        while try step() {}
    }

    // MARK: Columns

    /// The number of columns in each row.
    public var columnCount: Int32 { sqlite3_column_count(handle) }

    /// The names of the result columns, as SQLite reports them (an alias when the query
    /// gives one).
    public var columnNames: [String] {
        (0..<columnCount).map { column in sqlite3_column_name(handle, column).map { String(cString: $0) } ?? "" }
    }

    /// Whether the 0-based `column` of the current row is `NULL`.
    public func isNull(_ column: Int32) -> Bool {
        sqlite3_column_type(handle, column) == SQLITE_NULL
    }

    /// The 0-based `column` of the current row as an integer (0 for `NULL`).
    public func int64(_ column: Int32) -> Int64 { sqlite3_column_int64(handle, column) }

    /// The 0-based `column` of the current row as a double (0 for `NULL`).
    public func double(_ column: Int32) -> Double { sqlite3_column_double(handle, column) }

    /// The 0-based `column` of the current row as text: its exact bytes, including any NUL
    /// (empty for `NULL`; invalid UTF-8 is repaired with U+FFFD).
    public func text(_ column: Int32) -> String {
        guard let start = sqlite3_column_text(handle, column) else { return "" }
        let count = Int(sqlite3_column_bytes(handle, column))
        return String(decoding: UnsafeBufferPointer(start: start, count: count), as: UTF8.self)
    }

    /// The 0-based `column` of the current row as bytes (empty for an empty blob and `NULL`).
    public func blob(_ column: Int32) -> [UInt8] {
        withBlob(column) { [UInt8]($0) }
    }

    /// Calls `body` with the bytes of the 0-based `column` of the current row, without copying.
    ///
    /// The buffer is valid only during `body`, and only until the statement steps or resets.
    public func withBlob<R>(_ column: Int32, _ body: (UnsafeRawBufferPointer) throws -> R) rethrows -> R {
        let start = sqlite3_column_blob(handle, column)
        let count = Int(sqlite3_column_bytes(handle, column))
        return try body(UnsafeRawBufferPointer(start: start, count: start == nil ? 0 : count))
    }

    /// The 0-based `column` of the current row in its storage class.
    public func value(_ column: Int32) -> SQLValue {
        switch sqlite3_column_type(handle, column) {
        case SQLITE_INTEGER: return .integer(int64(column))
        case SQLITE_FLOAT: return .real(double(column))
        case SQLITE_TEXT: return .text(text(column))
        case SQLITE_BLOB: return .blob(blob(column))
        default: return .null
        }
    }
}

@available(*, unavailable)
extension Statement: Sendable {}
