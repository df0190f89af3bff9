/// A storage whose data set can be copied whole into another storage, of the same kind or
/// not, keeping every revision, stamp, id and stored reply (Specs/reliability.md, "Moving a
/// data set"): ``DataSetReader`` reads one, ``DataSetImport`` fills an empty one.
///
/// Reads run inside ``ServerStorage/read(_:)`` (one committed state, servers go on
/// serving); writes inside ``ServerStorage/write(_:)``. Like every storage call, each is
/// `nonisolated(nonsending)`.
public protocol TransferableServerStorage: ServerStorage {
    /// The schema lines the data set records (`Schema/describedLines` of the schema it was
    /// last opened with); nil when the place holds no data set yet. Called before
    /// ``ServerStorage/open(schema:)`` and outside any transaction, so that a tool can refuse
    /// to open a data set with a schema that would migrate it.
    nonisolated(nonsending) func recordedSchemaLines() async throws -> [String]?
    /// Whether the data set has `table` (one made by an older version may lack the optional ones).
    nonisolated(nonsending) func hasTable(_ table: TransferTable) async throws -> Bool
    /// Up to `limit` rows of `table` whose key comes after `key` (from the first when nil), in
    /// key order, each cell as ``TransferTable/columns`` says.
    nonisolated(nonsending) func tableRows(_ table: TransferTable, after key: [TransferCell]?, limit: Int) async throws -> [[TransferCell]]
    /// Up to `limit` records of `entity` whose id is above `id`, ascending, each with its
    /// per-field revisions and its root.
    nonisolated(nonsending) func records(_ entity: ServerEntity, after id: Int64, limit: Int) async throws -> [ServerRow]
    /// Empties `table`, making it first when the data set lacks it.
    nonisolated(nonsending) func clearTable(_ table: TransferTable) async throws
    /// Inserts `rows` into `table`.
    nonisolated(nonsending) func insertRows(_ rows: [[TransferCell]], into table: TransferTable) async throws
    /// Inserts `rows` as records of `entity`, exactly as given, with no log entry (the log
    /// is copied as a table).
    nonisolated(nonsending) func insertRecords(_ rows: [ServerRow], of entity: ServerEntity) async throws
}

/// One value of a sync-metadata table, as every storage keeps it.
public enum TransferCell: Sendable, Hashable {
    case null
    case integer(Int64)
    case text(String)
    case bytes([UInt8])
}

/// One of the tables of a data set's sync metadata, copied row by row as it is stored.
public struct TransferTable: Sendable, Hashable {
    public enum Kind: Sendable, Hashable { case integer, text, bytes }

    public struct Column: Sendable, Hashable {
        public let name: String
        public let kind: Kind
        /// Whether the column takes null.
        public let nullable: Bool
    }

    /// The table's name (`__fm_...`), safe to quote.
    public let name: String
    public let columns: [Column]
    /// How many of the first columns make the key the rows are read in order of.
    public let keyCount: Int
    /// Whether a data set may lack it (made before it existed, or never needed it).
    public let optional: Bool

    init(_ name: String, key: Int, optional: Bool = false, _ columns: [(String, Kind, Bool)]) {
        self.name = name
        self.keyCount = key
        self.optional = optional
        self.columns = columns.map { Column(name: $0.0, kind: $0.1, nullable: $0.2) }
    }

    /// The key columns.
    public var key: ArraySlice<Column> { columns.prefix(keyCount) }

    /// Whether `row` has a cell of the right kind for every column.
    public func accepts(_ row: [TransferCell]) -> Bool {
        guard row.count == columns.count else { return false }
        for (cell, column) in zip(row, columns) {
            switch (cell, column.kind) {
            case (.null, _): if !column.nullable { return false }
            case (.integer, .integer), (.text, .text), (.bytes, .bytes): continue
            default: return false
            }
        }
        return true
    }

    /// The state (`maxRevision`, `clock`, `horizon`, `schemaVersion`, ...).
    public static let server = TransferTable("__fm_server", key: 1, [("key", .text, false), ("value", .integer, false)])
    /// The id counters.
    public static let ids = TransferTable("__fm_ids", key: 1, [("entity", .text, false), ("next", .integer, false)])
    /// The latest revision of every record, alive or deleted.
    public static let log = TransferTable(
        "__fm_log", key: 2, [("entity", .text, false), ("id", .integer, false), ("revision", .integer, false)])
    /// Tombstones.
    public static let deleted = TransferTable(
        "__fm_deleted", key: 2,
        [("entity", .text, false), ("id", .integer, false), ("revision", .integer, false), ("stamp", .bytes, false), ("root", .integer, true)])
    /// Records that left a scope's root.
    public static let departed = TransferTable(
        "__fm_departed", key: 3, optional: true,
        [("entity", .text, false), ("root", .integer, false), ("id", .integer, false), ("revision", .integer, false)])
    /// Each client's last answer, replayed to a retry.
    public static let replies = TransferTable(
        "__fm_replies", key: 1,
        [("client", .text, false), ("request", .text, false), ("response", .bytes, false), ("owner", .text, false),
         ("stored", .integer, false), ("digest", .integer, true)])
    /// The schema versions a migrated data set still answers clients of.
    public static let schemaVersions = TransferTable(
        "__fm_schema_versions", key: 1, optional: true, [("version", .integer, false), ("lines", .text, false), ("names", .text, false)])
    /// The scope rules the records' roots were computed for.
    public static let scopes = TransferTable("__fm_scopes", key: 1, optional: true, [("signature", .text, false)])
    /// The times of revisions, for horizons given as an age.
    public static let marks = TransferTable("__fm_marks", key: 1, optional: true, [("revision", .integer, false), ("at", .integer, false)])

    /// Every table a transfer copies, in the order it copies them.
    public static let all: [TransferTable] = [server, ids, log, deleted, departed, replies, schemaVersions, scopes, marks]

    /// The table named `name`.
    public static func named(_ name: String) -> TransferTable? { all.first { $0.name == name } }
}
