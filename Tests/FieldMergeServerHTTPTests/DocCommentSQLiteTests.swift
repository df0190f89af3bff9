import FieldMerge
import FieldMergeSQLite
import Foundation
import Testing

// SerialQueueExecutor.swift block begin
actor Owner {
    let executor = SerialQueueExecutor(label: "app.db")
    nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
}
// SerialQueueExecutor.swift block end

extension Owner {
    /// Traps unless it runs on the executor's queue.
    func runsOnTheExecutorsQueue() -> Bool {
        executor.checkIsolated()
        return true
    }
}

/// The snippets of FieldMergeSQLite's `///` comments on `Database`, `Statement`,
/// `SQLiteError` and `SerialQueueExecutor`, between `// <file> block begin` and `… end`
/// (``DocSnippets/docComments`` checks that they are the comments' code, line for line).
@Suite(.serialized) struct DocCommentSQLiteTests {
    static func removeAppFiles() {
        for suffix in ["", "-wal", "-shm", "-journal"] { try? FileManager.default.removeItem(atPath: "/tmp/app.sqlite" + suffix) }
    }

    @Test func databaseSnippets_run() throws {
        Self.removeAppFiles()
        defer { Self.removeAppFiles() }
        // Database.swift block begin
        let db = try Database(.file(path: "/tmp/app.sqlite"))
        try db.execute("CREATE TABLE IF NOT EXISTS item(id INTEGER PRIMARY KEY, name TEXT NOT NULL)")
        try db.transaction {
            try db.run("INSERT INTO item(name) VALUES (?)", [.text("Buy milk")])
        }
        let count = try db.scalar("SELECT count(*) FROM item") // .integer(1)
        // Database.swift block end
        #expect(count == .integer(1))

        // Database.swift block begin
        let result = try db.namedRows("SELECT id, name AS title FROM item")
        let columns = result.columns   // ["id", "title"]
        let rows = result.rows         // [[.integer(1), .text("Buy milk")]]
        // Database.swift block end
        #expect(columns == ["id", "title"])
        #expect(rows == [[.integer(1), .text("Buy milk")]])
    }

    @Test func nestedTransactionSnippet_keepsTheOuterWrite() throws {
        struct Cancelled: Error {}
        let db = try Database(.memory)
        try db.execute("CREATE TABLE item(id INTEGER PRIMARY KEY, name TEXT NOT NULL)")
        // Database+Transaction.swift block begin
        try db.transaction {
            try db.run("INSERT INTO item(name) VALUES (?)", [.text("kept")])
            try? db.transaction {
                try db.run("INSERT INTO item(name) VALUES (?)", [.text("undone")])
                throw Cancelled()
            }
        }
        // Database+Transaction.swift block end
        #expect(try db.rows("SELECT name FROM item") == [[.text("kept")]])
    }

    @Test func statementSnippet_insertsEveryItem() throws {
        let db = try Database(.memory)
        try db.execute("CREATE TABLE item(id INTEGER PRIMARY KEY, name TEXT NOT NULL)")
        let items: [(Int64, String)] = [(1, "Milk"), (2, "Bread"), (3, "Eggs")]
        // Statement.swift block begin
        let insert = try db.statement("INSERT INTO item(id, name) VALUES (?, ?)")
        for (id, name) in items {
            try insert.bind(id, at: 1)
            try insert.bind(name, at: 2)
            try insert.execute()
        }
        // Statement.swift block end
        #expect(try db.rows("SELECT id, name FROM item ORDER BY id")
            == [[.integer(1), .text("Milk")], [.integer(2), .text("Bread")], [.integer(3), .text("Eggs")]])
    }

    @Test func sqliteErrorSnippet_catchesTheConstraintFailure() throws {
        let db = try Database(.memory)
        try db.execute("CREATE TABLE item(id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE)")
        try db.run("INSERT INTO item(name) VALUES (?)", [.text("a")])
        // SQLiteError.swift block begin
        do {
            try db.run("INSERT INTO item(name) VALUES (?)", [.text("a")])
        } catch where error.isConstraint {
            print(error) // SQLite error 2067 (UNIQUE constraint failed: item.name) in `INSERT ...`
        }
        // SQLiteError.swift block end
        #expect(try db.scalar("SELECT count(*) FROM item") == .integer(1))
    }

    @Test func executorSnippet_runsTheActorOnItsQueue() async {
        let owner = Owner()
        #expect(await owner.runsOnTheExecutorsQueue())
    }
}
