import FieldMerge
import FieldMergeProtocol
import FieldMergeSQLite

/// The server's side of the revision protocol, over its own SQLite store.
///
/// Each change set of a request is one transaction and, when it commits, one revision.
/// Creates get permanent ids (foreign keys to temporary ids are rewritten, also across the
/// change sets of one request); updates and deletes must name the revision the record has
/// now, else the change set is a conflict: it is rolled back and answered with the server's
/// true state of every record it touched. Every committed change is logged by revision, so
/// catch-up reads the log, not every table.
///
/// Not thread-safe: one request at a time (wrap it in an actor to serve concurrently).
public final class RevisionServer {
    /// Who may change what: return false to refuse a change (answered as a conflict).
    public typealias Authorization = (_ entity: String, _ id: Int64, _ kind: ChangeKind) -> Bool

    public enum ChangeKind: String, Sendable { case create, update, delete }

    /// How the server treats an update or delete that names an older revision.
    public enum Mode: String, Sendable, CaseIterable {
        /// The case study: a stale change is a conflict, answered with the truth.
        case strict
        /// A stale update is merged field by field with what changed since (the entity's
        /// strategies decide truly conflicting fields); a stale delete is still a conflict.
        case merge
    }

    public struct Options {
        /// Strict (the case study) or merge.
        public var mode: Mode = .strict
        /// How far ahead of the server's clock an incoming stamp may be; later ones are clamped.
        public var maxDrift: UInt64 = 60_000
        /// The largest catch-up page, in records, when the request names no `limit`.
        public var defaultPageLimit = 100_000
        public var authorize: Authorization?
        public init() {}
    }

    public let schema: Schema
    public let database: Database
    public internal(set) var maxRevision: Int64
    var clock: HybridClock
    let options: Options
    var tables: [String: ServerTable] = [:]
    let codec: WireCodec

    public init(
        _ location: Database.Location = .memory, schema: Schema, options: Options = Options(),
        replica: ReplicaID = ReplicaID(0x5E_5E), wall: any WallClock = SystemWallClock()
    ) throws(SQLiteError) {
        self.schema = schema
        self.options = options
        codec = WireCodec(schema: schema)
        database = try Database(location)
        clock = HybridClock(replica: replica, maxDrift: options.maxDrift, wall: wall)
        for entity in schema.entities { tables[entity.name] = ServerTable(entity) }
        for entity in schema.entities {
            for (index, field) in entity.fields.enumerated() {
                if case .reference(let target, let action) = field.type {
                    tables[target]?.referencedBy.append((entity.name, index, action))
                }
            }
        }
        if try database.scalar("SELECT count(*) FROM sqlite_master WHERE name = '__fm_server'") != .integer(1) {
            try database.execute("""
                CREATE TABLE "__fm_server" ("key" TEXT PRIMARY KEY, "value" INTEGER NOT NULL);
                INSERT INTO "__fm_server" VALUES ('maxRevision', 0), ('clock', 0);
                CREATE TABLE "__fm_ids" ("entity" TEXT PRIMARY KEY, "next" INTEGER NOT NULL);
                CREATE TABLE "__fm_deleted" ("entity" TEXT NOT NULL, "id" INTEGER NOT NULL,
                  "revision" INTEGER NOT NULL, "stamp" BLOB NOT NULL, PRIMARY KEY ("entity", "id")) WITHOUT ROWID;
                CREATE TABLE "__fm_log" ("entity" TEXT NOT NULL, "id" INTEGER NOT NULL,
                  "revision" INTEGER NOT NULL, PRIMARY KEY ("entity", "id")) WITHOUT ROWID;
                CREATE INDEX "__fm_log_revision" ON "__fm_log" ("revision", "entity", "id");
                CREATE TABLE "__fm_replies" ("client" TEXT PRIMARY KEY, "request" TEXT NOT NULL, "response" BLOB NOT NULL);
                """)
            for table in tables.values { try database.execute(table.createTable) }
        }
        try Self.checkSchema(database, schema)
        // Catch-up reads one entity's window of revisions at a time; deletes find children.
        try database.execute("""
            CREATE INDEX IF NOT EXISTS "__fm_log_entity" ON "__fm_log" ("entity", "revision", "id")
            """)
        for entity in schema.entities {
            for index in entity.referenceIndexes { try database.execute(index) }
        }
        guard case .integer(let revision)? = try database.scalar("SELECT value FROM __fm_server WHERE key = 'maxRevision'"),
            case .integer(let last)? = try database.scalar("SELECT value FROM __fm_server WHERE key = 'clock'")
        else { throw SQLiteError(code: 11, message: "the server's state is damaged") }
        maxRevision = revision
        clock = HybridClock(replica: replica, last: UInt64(bitPattern: last), maxDrift: options.maxDrift, wall: wall)
    }

    /// The file records the schema it was made for (files from before keep theirs from now
    /// on); opening it with another is an error that says what differs.
    private static func checkSchema(_ database: Database, _ schema: Schema) throws(SQLiteError) {
        try database.execute("""
            CREATE TABLE IF NOT EXISTS "__fm_schema" ("line" INTEGER PRIMARY KEY, "text" TEXT NOT NULL)
            """)
        let stored = try database.rows("SELECT \"text\" FROM \"__fm_schema\" ORDER BY \"line\"").compactMap { row -> String? in
            if case .text(let line)? = row.first { return line }
            return nil
        }
        let expected = schema.describedLines
        if stored.isEmpty {
            for (number, line) in expected.enumerated() {
                try database.run("INSERT INTO \"__fm_schema\" VALUES (?, ?)", [.integer(Int64(number)), .text(line)])
            }
        } else if stored != expected {
            throw SQLiteError(code: 20, message: "the server's file was made for another schema: " + schema.differences(fromStored: stored))
        }
    }

    func table(_ entity: String) throws(ServerRefusal) -> ServerTable {
        guard let table = tables[entity] else { throw ServerRefusal.unknownEntity(entity) }
        return table
    }

    /// The next permanent id of `entity` (ids are never reused, even after deletes).
    func nextID(_ entity: String) throws(SQLiteError) -> Int64 {
        let stored = try database.scalar("SELECT \"next\" FROM \"__fm_ids\" WHERE \"entity\" = ?", [.text(entity)])
        var next: Int64 = 1
        if case .integer(let value)? = stored { next = value } else if let table = tables[entity],
            case .integer(let largest)? = try database.scalar("SELECT max(\"id\") FROM \(table.table)")
        {
            next = largest + 1
        }
        try database.run("INSERT OR REPLACE INTO \"__fm_ids\" VALUES (?, ?)", [.text(entity), .integer(next + 1)])
        return next
    }

    func saveState() throws(SQLiteError) {
        try database.run("UPDATE \"__fm_server\" SET \"value\" = ? WHERE \"key\" = 'maxRevision'", [.integer(maxRevision)])
        try database.run(
            "UPDATE \"__fm_server\" SET \"value\" = ? WHERE \"key\" = 'clock'", [.integer(Int64(bitPattern: clock.last))])
    }

}

/// Why a change set cannot commit as sent; turned into a conflict answer or an error.
enum ServerRefusal: Error {
    /// A stale revision, a refused authorization, a restricted delete: answer with the truth.
    case conflict(touched: [(entity: String, id: Int64)])
    case unknownEntity(String)
    case invalid(String)
}
