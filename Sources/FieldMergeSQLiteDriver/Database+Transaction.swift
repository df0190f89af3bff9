import CSQLite

extension Database {
    /// How a top-level transaction takes its locks (`BEGIN DEFERRED | IMMEDIATE | EXCLUSIVE`).
    public enum TransactionKind: Sendable {
        /// Takes locks on first read or write; a later write may fail with a busy error.
        case deferred
        /// Takes the write lock at once, so a busy error can only come at the start.
        case immediate
        /// Like ``immediate``; in rollback-journal mode it also keeps readers out.
        case exclusive
    }

    /// Runs `body` in a transaction, or in a savepoint when a transaction is already open.
    ///
    /// The transaction commits (a savepoint is released) when `body` returns, and rolls back
    /// when it throws; nested calls therefore undo only their own part when an outer caller
    /// catches the error.
    ///
    /// ```swift
    /// try db.transaction {
    ///     try db.run("INSERT INTO item(name) VALUES (?)", [.text("kept")])
    ///     try? db.transaction {
    ///         try db.run("INSERT INTO item(name) VALUES (?)", [.text("undone")])
    ///         throw Cancelled()
    ///     }
    /// }
    /// ```
    ///
    /// - Parameters:
    ///   - kind: How a top-level transaction begins; ignored for a nested savepoint.
    ///   - body: The work; it runs on this connection, synchronously.
    /// - Returns: What `body` returns.
    /// - Throws: The error of `body`, unchanged, after rolling back; or ``SQLiteError`` when
    ///   `BEGIN` fails, or when `COMMIT` fails (for instance busy), after rolling back.
    public func transaction<T>(_ kind: TransactionKind = .immediate, _ body: () throws -> T) throws -> T {
        let nested = isInTransaction
        try run(nested ? "SAVEPOINT fieldmerge" : kind.begin)
        let result: T
        do {
            result = try body()
        } catch {
            rollback(nested: nested)
            throw error
        }
        do {
            try run(nested ? "RELEASE fieldmerge" : "COMMIT")
        } catch {
            // A deferred foreign key fails only here, without saying which: name the rows.
            let named = error.code == 787 ? foreignKeyViolations(of: error) : error
            rollback(nested: nested)
            throw named
        }
        return result
    }

    /// `error` (a failed foreign key at `COMMIT`) with the first violating rows named, read
    /// with `PRAGMA foreign_key_check` while the transaction is still open.
    private func foreignKeyViolations(of error: SQLiteError) -> SQLiteError {
        guard let rows = try? self.rows("PRAGMA foreign_key_check"), !rows.isEmpty else { return error }
        let named = rows.prefix(5).map { row -> String in
            func text(_ index: Int) -> String {
                switch row.count > index ? row[index] : .null {
                case .text(let text): return text
                case .integer(let value): return String(value)
                default: return "?"
                }
            }
            return "\(text(0)) row \(text(1)) → \(text(2))"
        }
        var detailed = error
        detailed.message += " (\(rows.count) rows: \(named.joined(separator: ", "))\(rows.count > 5 ? ", …" : ""))"
        return detailed
    }

    /// Undoes the current transaction or innermost savepoint, ignoring failures: SQLite may
    /// already have rolled the transaction back itself (for instance after `SQLITE_FULL`).
    private func rollback(nested: Bool) {
        guard isInTransaction else { return }
        if nested {
            // ROLLBACK TO keeps the savepoint open; RELEASE then removes it.
            guard (try? run("ROLLBACK TO fieldmerge")) != nil else { return }
            try? run("RELEASE fieldmerge")
        } else {
            try? run("ROLLBACK")
        }
    }
}

extension Database.TransactionKind {
    var begin: String {
        switch self {
        case .deferred: return "BEGIN DEFERRED"
        case .immediate: return "BEGIN IMMEDIATE"
        case .exclusive: return "BEGIN EXCLUSIVE"
        }
    }
}
