import FieldMerge

/// One piece of a data set as a transfer moves it: a header first, then the rows of each
/// metadata table and the records of each entity, then the counts of what came.
public enum DataSetItem: Sendable {
    /// What the data set is; always first.
    case header(DataSetHeader)
    /// A row of a sync-metadata table.
    case row(TransferTable, [TransferCell])
    /// A record of the entity at position `entity` of the schema.
    case record(entity: Int, ServerRow)
    /// How many rows and records came; always last, so that a reader of a file knows it
    /// read the whole data set.
    case end(DataSetCounts)
}

/// The head of a data set in transfer.
public struct DataSetHeader: Sendable, Equatable {
    /// The version of the transfer format ``DataSetReader`` writes.
    public static let currentFormat = 1

    /// The transfer format's version.
    public var format: Int
    /// The schema the data set was made for (`Schema/describedLines`).
    public var schemaLines: [String]
    /// Its version.
    public var schemaVersion: Int
    /// The data set's revision when it was read (informative; the state travels in `__fm_server`).
    public var revision: Int64

    public init(format: Int = DataSetHeader.currentFormat, schemaLines: [String], schemaVersion: Int, revision: Int64) {
        self.format = format
        self.schemaLines = schemaLines
        self.schemaVersion = schemaVersion
        self.revision = revision
    }
}

/// How many rows of each table and records of each entity a transfer moved, by name.
public struct DataSetCounts: Sendable, Equatable {
    public var tables: [String: Int]
    public var records: [String: Int]

    public init(tables: [String: Int] = [:], records: [String: Int] = [:]) {
        self.tables = tables
        self.records = records
    }

    /// The same counts without the tables and entities of which none came.
    public var withoutZeros: DataSetCounts {
        DataSetCounts(tables: tables.filter { $0.value != 0 }, records: records.filter { $0.value != 0 })
    }

    /// Every record of every entity.
    public var totalRecords: Int { records.values.reduce(0, +) }
}

/// Why a transfer stopped; nothing it wrote is kept (the import is one transaction).
public struct DataSetTransferError: Error, Sendable, CustomStringConvertible {
    public let message: String

    public init(_ message: String) { self.message = message }

    public var description: String { message }
}
