import Foundation
import Testing
@testable import FieldMergeSQLiteDriver

@Suite struct DatabaseTests {
    // MARK: Values

    @Test func everyStorageClass_roundTripsThroughBindAndRead() throws {
        let db = try Database()
        try db.execute("CREATE TABLE v(x)")
        let hugeText = String(repeating: "é∑x🌍", count: 500_000)
        let largeBlob = (0..<4_000_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
        let values: [SQLValue] = [
            .null, .integer(.min), .integer(.max), .integer(0), .real(1.5), .real(-.greatestFiniteMagnitude),
            .real(.leastNonzeroMagnitude), .real(.infinity), .text(""), .text("héllo ∑ 🌍 中文"),
            .text("a\u{0}b\u{0}"), .text(hugeText), .blob([]), .blob([0, 1, 255]), .blob(largeBlob),
        ]
        for value in values {
            try db.run("INSERT INTO v(x) VALUES (?)", [value])
            #expect(try db.scalar("SELECT x FROM v WHERE rowid = ?", [.integer(db.lastInsertRowID)]) == value)
        }
        // Every byte of text with NUL is stored, not just those before the first NUL.
        #expect(try db.scalar("SELECT length(CAST(x AS BLOB)) FROM v WHERE x = ?", [.text("a\u{0}b\u{0}")]) == .integer(4))
        // An empty blob is a blob, distinct from NULL.
        #expect(try db.scalar("SELECT typeof(x) FROM v WHERE x = ?", [.blob([])]) == .text("blob"))
        #expect(try db.scalar("SELECT count(*) FROM v WHERE x IS NULL") == .integer(1))
    }

    @Test func hasTable_followsTheSchemaOfTheCurrentTransaction() throws {
        let db = try Database()
        #expect(try db.hasTable("t") == false)
        try db.execute("CREATE TABLE t(x); CREATE INDEX t_x ON t(x); CREATE VIEW v AS SELECT x FROM t")
        #expect(try db.hasTable("t"))
        #expect(try db.hasTable("T"))  // as SQLite matches names
        #expect(try db.hasTable("v") == false)
        // A view or an index is no table, nor is a prefix, nor a name cut at a NUL.
        #expect(try db.hasTable("t_x") == false)
        #expect(try db.hasTable("") == false)
        #expect(try db.hasTable("t\u{0}") == false)
        try db.execute("BEGIN; CREATE TABLE \"we'ird \"\"name\"(y); DROP TABLE t")
        #expect(try db.hasTable("we'ird \"name"))
        #expect(try db.hasTable("t") == false)
        try db.execute("ROLLBACK")
        #expect(try db.hasTable("we'ird \"name") == false)
        #expect(try db.hasTable("t"))
        db.close()
        #expect(throws: SQLiteError.self) { try db.hasTable("t") }
    }

    @Test func nan_isStoredAsNull() throws {
        let db = try Database()
        try db.execute("CREATE TABLE v(x)")
        try db.run("INSERT INTO v(x) VALUES (?)", [.real(.nan)])
        #expect(try db.scalar("SELECT typeof(x) FROM v") == .text("null"))
        #expect(try db.scalar("SELECT x FROM v") == .null)
    }

    @Test func negativeZero_keepsItsSignOnlyWithoutREALAffinity() throws {
        let db = try Database()
        try db.execute("CREATE TABLE v(untyped, real REAL)")
        try db.run("INSERT INTO v VALUES (?, ?)", [.real(-0.0), .real(-0.0)])
        let row = try db.rows("SELECT untyped, real, typeof(real) FROM v")
        guard case let .real(untyped) = row.first?[0], case let .real(real) = row.first?[1] else {
            Issue.record("-0.0 did not come back as reals: \(row)")
            return
        }
        #expect(untyped == 0 && untyped.sign == .minus)
        // SQLite stores an integral value in a REAL column as an integer, which drops the sign.
        #expect(real == 0 && real.sign == .plus && row.first?[2] == .text("real"))
    }

    @Test func typedBindsAndReaders_agreeWithSQLValue() throws {
        let db = try Database()
        try db.execute("CREATE TABLE t(i INTEGER, r REAL, s TEXT, b BLOB, e BLOB, n)")
        let insert = try db.statement("INSERT INTO t VALUES (?, ?, ?, ?, ?, ?)")
        try insert.bind(Int64(-42), at: 1)
        try insert.bind(2.25, at: 2)
        try insert.bind("x\u{0}y", at: 3)
        try insert.bind([9, 8, 7], at: 4)
        try [UInt8]().withUnsafeBytes { empty in try insert.bind(bytes: empty, at: 5) }
        try insert.bindNull(at: 6)
        try insert.execute()
        let select = try db.statement("SELECT i, r, s, b, e, n FROM t")
        #expect(try select.step())
        #expect(select.columnCount == 6)
        #expect(select.int64(0) == -42 && select.double(1) == 2.25 && select.text(2) == "x\u{0}y")
        #expect(select.blob(3) == [9, 8, 7] && select.withBlob(3) { $0.reduce(0) { $0 + Int($1) } } == 24)
        #expect(select.blob(4) == [] && !select.isNull(4) && select.value(4) == .blob([]))
        #expect(select.isNull(5) && select.value(5) == .null)
        #expect(try !select.step())
    }

    @Test func bindingCountMismatch_throwsRangeError() throws {
        let db = try Database()
        let error = #expect(throws: SQLiteError.self) { try db.run("SELECT ?, ?", [.integer(1)]) }
        #expect(error?.code == 25 && error?.sql == "SELECT ?, ?")
        #expect(throws: SQLiteError.self) { try db.statement("SELECT ?").bind(.integer(1), at: 2) }
    }

    // MARK: Statement cache

    @Test func statementCache_returnsTheSameResetStatementForTheSameSQL() throws {
        let db = try Database()
        try db.execute("CREATE TABLE t(x)")
        let first = try db.statement("INSERT INTO t VALUES (?)")
        try first.bind(Int64(1), at: 1)
        let second = try db.statement("INSERT INTO t VALUES (?)")
        #expect(first === second)
        try second.execute()  // the binding was cleared when the statement was handed out again
        #expect(try db.rows("SELECT x FROM t") == [[.null]])
        #expect(db.changes == 1 && db.lastInsertRowID == 1)
    }

    @Test func statementCache_evictsTheLeastRecentlyUsedBeyondTheLimit() throws {
        var options = Database.Options()
        options.statementCacheLimit = 3
        let db = try Database(options: options)
        let hot = try db.statement("SELECT 0")
        let early = try db.statement("SELECT 1")
        var previous = early
        for n in 2...50 {
            // Touched before every miss, these two are never the least recently used.
            #expect(try db.statement("SELECT 0") === hot)
            #expect(try db.statement("SELECT \(n - 1)") === previous)
            previous = try db.statement("SELECT \(n)")  // evicts SELECT n-2
        }
        let again = try db.statement("SELECT 1")  // evicted long ago: prepared anew
        #expect(again !== early)
        #expect(try again.step() && again.int64(0) == 1)
        #expect(try early.step() && early.int64(0) == 1)  // the evicted statement the caller holds still works
    }

    // MARK: Errors

    @Test func uniqueViolation_carriesExtendedCodeMessageAndSQL() throws {
        let db = try Database()
        try db.execute("CREATE TABLE t(name TEXT UNIQUE)")
        let sql = "INSERT INTO t(name) VALUES (?)"
        try db.run(sql, [.text("a")])
        let error = #expect(throws: SQLiteError.self) { try db.run(sql, [.text("a")]) }
        #expect(error?.code == 2067 && error?.isConstraint == true && error?.isBusy == false)
        #expect(error?.message == "UNIQUE constraint failed: t.name" && error?.sql == sql)
        #expect(error?.description == "SQLite error 2067 (UNIQUE constraint failed: t.name) in `\(sql)`")
        try db.run(sql, [.text("b")])  // the cached statement is usable after the failure
        #expect(try db.scalar("SELECT count(*) FROM t") == .integer(2))
    }

    @Test func syntaxError_carriesCodeOneAndTheSQL() throws {
        let db = try Database()
        let error = #expect(throws: SQLiteError.self) { try db.statement("SELEC 1") }
        #expect(error?.code == 1 && error?.sql == "SELEC 1" && error?.message.contains("syntax error") == true)
        let execError = #expect(throws: SQLiteError.self) { try db.execute("CREATE TABLE t(x); SELEC 1") }
        #expect(execError?.code == 1 && execError?.sql == "CREATE TABLE t(x); SELEC 1")
        let several = #expect(throws: SQLiteError.self) { try db.statement("SELECT 1; SELECT 2") }
        #expect(several?.code == 21)
        #expect(try db.statement("SELECT 1; -- trailing comment").sql == "SELECT 1; -- trailing comment")
    }

    @Test func closedDatabase_closeIsIdempotentAndLaterCallsThrow() throws {
        let db = try Database()
        let held = try db.statement("SELECT 7")
        db.close()
        db.close()
        let error = #expect(throws: SQLiteError.self) { try db.run("SELECT 1") }
        #expect(error?.code == 21 && !db.isInTransaction && db.changes == 0)
        #expect(held.sql == "SELECT 7")  // released after the connection closed: no crash
    }

    // MARK: Transactions

    @Test func transaction_commitsWhenTheBodyReturns() throws {
        let db = try Database()
        try db.execute("CREATE TABLE t(x)")
        let value = try db.transaction {
            try db.run("INSERT INTO t VALUES (1)")
            #expect(db.isInTransaction)
            return "done"
        }
        #expect(value == "done" && !db.isInTransaction)
        #expect(try db.scalar("SELECT count(*) FROM t") == .integer(1))
    }

    @Test func transaction_rollsBackAndRethrowsTheBodysErrorUnchanged() throws {
        let db = try Database()
        try db.execute("CREATE TABLE t(x)")
        #expect(throws: Boom(id: 7)) {
            try db.transaction(.deferred) {
                try db.run("INSERT INTO t VALUES (1)")
                throw Boom(id: 7)
            }
        }
        #expect(!db.isInTransaction)
        #expect(try db.scalar("SELECT count(*) FROM t") == .integer(0))
    }

    @Test func nestedTransaction_innerFailureRollsBackOnlyTheInnerPart() throws {
        let db = try Database()
        try db.execute("CREATE TABLE t(x)")
        try db.transaction(.exclusive) {
            try db.run("INSERT INTO t VALUES ('outer-before')")
            #expect(throws: Boom(id: 1)) {
                try db.transaction {
                    try db.run("INSERT INTO t VALUES ('inner')")
                    try db.transaction { try db.run("INSERT INTO t VALUES ('innermost')") }
                    throw Boom(id: 1)
                }
            }
            #expect(db.isInTransaction)
            try db.transaction { try db.run("INSERT INTO t VALUES ('inner-kept')") }
            try db.run("INSERT INTO t VALUES ('outer-after')")
        }
        #expect(!db.isInTransaction)
        #expect(try db.rows("SELECT x FROM t ORDER BY rowid")
            == [[.text("outer-before")], [.text("inner-kept")], [.text("outer-after")]])
    }

    @Test func secondWriter_getsBusyWhileTheFirstHoldsAWriteTransaction_andNothingIsLost() throws {
        try withTemporaryDirectory { directory in
            var options = Database.Options()
            options.busyTimeoutMilliseconds = 50
            let path = directory + "/busy.sqlite"
            let first = try Database(.file(path: path), options: options)
            let second = try Database(.file(path: path), options: options)
            try first.execute("CREATE TABLE t(x)")
            try first.transaction {
                try first.run("INSERT INTO t VALUES (1)")
                let error = #expect(throws: SQLiteError.self) {
                    try second.transaction(.immediate) { try second.run("INSERT INTO t VALUES (2)") }
                }
                #expect(error?.isBusy == true && error?.code == 5 && error?.sql == "BEGIN IMMEDIATE")
                #expect(!second.isInTransaction)
            }
            try second.transaction { try second.run("INSERT INTO t VALUES (2)") }
            #expect(try first.rows("SELECT x FROM t ORDER BY x") == [[.integer(1)], [.integer(2)]])
            #expect(try second.scalar("SELECT count(*) FROM t") == .integer(2))
        }
    }

    @Test func failedCommit_rollsBackAndThrowsTheBusyError() throws {
        try withTemporaryDirectory { directory in
            var options = Database.Options()
            options.busyTimeoutMilliseconds = 50
            options.walMode = false  // in rollback-journal mode a reader blocks the writer's COMMIT
            let path = directory + "/journal.sqlite"
            let writer = try Database(.file(path: path), options: options)
            let reader = try Database(.file(path: path), options: options)
            try writer.execute("CREATE TABLE t(x)")
            try reader.execute("BEGIN; SELECT count(*) FROM t")
            let error = #expect(throws: SQLiteError.self) {
                try writer.transaction(.deferred) { try writer.run("INSERT INTO t VALUES (1)") }
            }
            #expect(error?.isBusy == true && error?.sql == "COMMIT")
            #expect(!writer.isInTransaction)
            try reader.execute("COMMIT")
            #expect(try writer.scalar("SELECT count(*) FROM t") == .integer(0))
        }
    }

    // MARK: Files

    @Test func readOnlyOpen_writesFailWithIsReadOnly() throws {
        try withTemporaryDirectory { directory in
            let path = directory + "/read-only.sqlite"
            do {
                let db = try Database(.file(path: path))
                try db.execute("CREATE TABLE t(x); INSERT INTO t VALUES (1)")
            }
            var options = Database.Options()
            options.readOnly = true
            let db = try Database(.file(path: path), options: options)
            #expect(try db.scalar("SELECT x FROM t") == .integer(1))
            let error = #expect(throws: SQLiteError.self) { try db.run("INSERT INTO t VALUES (2)") }
            #expect(error?.isReadOnly == true && error?.code == 8 && error?.isConstraint == false)
            #expect(throws: SQLiteError.self) { try Database(.file(path: directory + "/missing.sqlite"), options: options) }
        }
    }

    @Test func fileDatabases_useWALAndNormalSync() throws {
        try withTemporaryDirectory { directory in
            let db = try Database(.file(path: directory + "/wal.sqlite"))
            #expect(try db.scalar("PRAGMA journal_mode") == .text("wal"))
            #expect(try db.scalar("PRAGMA synchronous") == .integer(1))
            var options = Database.Options()
            options.walMode = false
            let journal = try Database(.file(path: directory + "/journal.sqlite"), options: options)
            #expect(try journal.scalar("PRAGMA journal_mode") == .text("delete"))
            #expect(try Database().scalar("PRAGMA journal_mode") == .text("memory"))
        }
    }

    // MARK: SQL safety

    @Test func quote_handlesQuotesAndHostileNames() throws {
        #expect(Database.quote("plain") == "\"plain\"")
        #expect(Database.quote("a\"b") == "\"a\"\"b\"")
        #expect(Database.quote("") == "\"\"")
        let db = try Database()
        try db.execute("CREATE TABLE x(y)")
        let hostile = "a\"b; DROP TABLE x; --"
        let table = Database.quote(hostile), column = Database.quote("we\"ird col")
        try db.execute("CREATE TABLE \(table) (\(column) TEXT)")
        try db.run("INSERT INTO \(table) (\(column)) VALUES (?)", [.text("safe")])
        #expect(try db.scalar("SELECT \(column) FROM \(table)") == .text("safe"))
        #expect(try db.rows("SELECT name FROM sqlite_schema ORDER BY name") == [[.text(hostile)], [.text("x")]])
    }

    @Test func foreignKeys_areEnforced() throws {
        let db = try Database()
        try db.execute("""
            CREATE TABLE parent(id INTEGER PRIMARY KEY);
            CREATE TABLE child(parent INTEGER REFERENCES parent(id));
            """)
        let error = #expect(throws: SQLiteError.self) { try db.run("INSERT INTO child VALUES (?)", [.integer(1)]) }
        #expect(error?.code == 787 && error?.isConstraint == true)
        try db.run("INSERT INTO parent VALUES (?)", [.integer(1)])
        try db.run("INSERT INTO child VALUES (?)", [.integer(1)])
        #expect(throws: SQLiteError.self) { try db.run("DELETE FROM parent") }
        #expect(try db.scalar("SELECT count(*) FROM child") == .integer(1))
    }
}

private struct Boom: Error, Equatable {
    var id: Int
}

/// Runs `body` with a fresh directory under the system's temporary directory, then removes it.
private func withTemporaryDirectory<T>(_ body: (String) throws -> T) throws -> T {
    let path = FileManager.default.temporaryDirectory.path + "/fieldmerge-db-\(UUID().uuidString)"
    try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: path) }
    return try body(path)
}

@Suite struct NamedRowsTests {
    @Test func namedRows_giveTheColumnNamesWithTheRows() throws {
        let db = try Database()
        try db.execute("CREATE TABLE item (id INTEGER PRIMARY KEY, name TEXT NOT NULL)")
        try db.run("INSERT INTO item (name) VALUES (?)", [.text("Milk")])
        let result = try db.namedRows("SELECT id, name AS title FROM item WHERE id = ?", [.integer(1)])
        #expect(result.columns == ["id", "title"])
        #expect(result.rows == [[.integer(1), .text("Milk")]])
    }
}

@Suite struct DurabilityOptionTests {
    @Test func durableAcrossPowerLoss_setsSynchronousFull_andTheDefaultIsNormal() throws {
        let folder = NSTemporaryDirectory() + "fm-sync-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        var options = Database.Options()
        #expect(try Database(.file(path: folder + "/a.sqlite"), options: options).scalar("PRAGMA synchronous") == .integer(1))
        options.durableAcrossPowerLoss = true
        #expect(try Database(.file(path: folder + "/b.sqlite"), options: options).scalar("PRAGMA synchronous") == .integer(2))
    }
}
