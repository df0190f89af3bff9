import FieldMerge
import FieldMergeSQLiteDriver
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A server's SQLite data set as an operator sees it: what it holds, read from the file
/// alone (its schema is recorded in it), in one read transaction that a running server
/// does not notice (`fieldmerge admin stats`).
public struct SQLiteDataSetStats: Sendable, Equatable {
    public struct EntityStats: Sendable, Equatable {
        public var name: String
        /// Live records.
        public var records: Int
        /// Tombstones of deleted records (kept so that devices learn of the deletes).
        public var tombstones: Int
    }

    /// A device the server has answered, as its last stored reply says.
    public struct Device: Sendable, Equatable {
        public var client: String
        /// The user of its last request; empty when the server had no authentication.
        public var user: String
        /// When its last reply was stored (milliseconds since the epoch).
        public var lastSeen: Int64
    }

    public var schemaVersion: Int
    /// The data set's revision.
    public var revision: Int64
    public var entities: [EntityStats]
    /// Entries of the revision log (one per record ever written, deleted ones included).
    public var logEntries: Int
    /// Replies kept for retries, one per device.
    public var storedReplies: Int
    /// The devices, the most recently seen first.
    public var devices: [Device]
    /// The file's size and what SQLite holds free in it, in bytes.
    public var fileBytes: Int64
    public var freeBytes: Int64
}

/// Operator's work on a server's SQLite data set: ``stats(path:)``, ``backup(path:to:)``,
/// ``restore(from:to:replacing:)``.
public enum SQLiteDataSet {
    /// What the data set at `path` holds. Reads one committed state; changes nothing.
    ///
    /// - Throws: ``SQLiteDataSetError`` when the file is missing or not a server's data set.
    public static func stats(path: String) throws(SQLiteDataSetError) -> SQLiteDataSetStats {
        let database = try open(path)
        defer { database.close() }
        return try describe(path) { () throws(SQLiteError) in
            // One read transaction: every count from the same committed state.
            try database.execute("BEGIN DEFERRED")
            defer { try? database.execute("ROLLBACK") }
            do {
                let outline = try recordedOutline(database, path)
                var entities: [SQLiteDataSetStats.EntityStats] = []
                for entity in outline.entities where !entity.retired {
                    let records = try count(database, "SELECT count(*) FROM \(Database.quote(entity.name))")
                    let tombstones = try count(database, "SELECT count(*) FROM \"__fm_deleted\" WHERE \"entity\" = ?", [.text(entity.name)])
                    entities.append(.init(name: entity.name, records: records, tombstones: tombstones))
                }
                let devices = try database.rows(
                    "SELECT \"client\", \"owner\", \"stored\" FROM \"__fm_replies\" ORDER BY \"stored\" DESC, \"client\"").map { row in
                    SQLiteDataSetStats.Device(client: text(row[0]), user: text(row[1]), lastSeen: integer(row[2]))
                }
                let pageSize = integer(try database.scalar("PRAGMA page_size"))
                return SQLiteDataSetStats(
                    // A data set never migrated records no version: it is version 1.
                    schemaVersion: Int(integer(try database.scalar("SELECT \"value\" FROM \"__fm_server\" WHERE \"key\" = 'schemaVersion'") ?? .integer(1))),
                    revision: integer(try database.scalar("SELECT \"value\" FROM \"__fm_server\" WHERE \"key\" = 'maxRevision'")),
                    entities: entities,
                    logEntries: try count(database, "SELECT count(*) FROM \"__fm_log\""),
                    storedReplies: devices.count, devices: devices,
                    fileBytes: integer(try database.scalar("PRAGMA page_count")) * pageSize,
                    freeBytes: integer(try database.scalar("PRAGMA freelist_count")) * pageSize)
            }
        }
    }

    /// The schema recorded in the file, by names.
    static func recordedOutline(_ database: Database, _ path: String) throws(SQLiteError) -> SchemaOutline {
        let lines = try database.rows("SELECT \"text\" FROM \"__fm_schema\" ORDER BY \"line\"").map { text($0[0]) }
        guard let outline = SchemaOutline(lines: lines), !outline.entities.isEmpty,
            outline.entities.allSatisfy({ !$0.name.utf8.contains(0) })
        else {
            throw SQLiteError(code: 11, message: "\(path) records no schema a server wrote")
        }
        return outline
    }

    /// A connection to the existing file at `path` that leaves its journal mode as it is.
    /// It may write, though nothing here writes with it: a read-only connection could not
    /// remove the write-ahead log it finds when it is the last to close, and would leave it
    /// behind (which `restore` takes for a server still running).
    static func open(_ path: String) throws(SQLiteDataSetError) -> Database {
        guard access(path, F_OK) == 0 else { throw SQLiteDataSetError("\(path) does not exist") }
        var options = Database.Options()
        options.walMode = false
        do {
            return try Database(.file(path: path), options: options)
        } catch {
            throw SQLiteDataSetError("cannot open \(path): \(error)")
        }
    }

    /// Runs `body`, its SQLite errors said as this data set's.
    static func describe<T>(_ path: String, _ body: () throws(SQLiteError) -> T) throws(SQLiteDataSetError) -> T {
        do {
            return try body()
        } catch {
            if error.message.contains("no such table") { throw SQLiteDataSetError("\(path) is not a FieldMerge server's data set (\(error.message))") }
            throw SQLiteDataSetError("\(path): \(error)")
        }
    }

    private static func count(_ database: Database, _ sql: String, _ bindings: [SQLValue] = []) throws(SQLiteError) -> Int {
        Int(integer(try database.scalar(sql, bindings)))
    }

    private static func integer(_ value: SQLValue?) -> Int64 {
        if case .integer(let n)? = value { return n }
        return 0
    }

    private static func text(_ value: SQLValue) -> String {
        if case .text(let s) = value { return s }
        return ""
    }
}

/// Why an operator's command on a data set did nothing, in words.
public struct SQLiteDataSetError: Error, Sendable, Equatable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
