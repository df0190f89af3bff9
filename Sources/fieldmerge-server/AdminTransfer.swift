import FieldMerge
import FieldMergeDataSetFile
import FieldMergeJSON
import FieldMergeServer
import FieldMergeServerPostgres
import FieldMergeServerSQLite
import FieldMergeSimulation
import Foundation

/// Where a data set is for `admin export`, `import` and `copy`: a SQLite file or a
/// PostgreSQL schema.
enum DataSetPlace: CustomStringConvertible {
    case sqlite(String)
    case postgres(PostgresURL, schema: String?)

    /// The place `db` or `postgres` names (exactly one of them), as the options called `names`.
    static func from(db: String?, postgres: String?, postgresSchema: String?, names: String) throws(AdminTransferError) -> DataSetPlace {
        switch (db, postgres) {
        case (let path?, nil):
            guard postgresSchema == nil else { throw AdminTransferError("a PostgreSQL schema needs a PostgreSQL URL (\(names))") }
            return .sqlite(path)
        case (nil, let url?):
            do { return .postgres(try PostgresURL(url), schema: postgresSchema) } catch { throw AdminTransferError("\(error)") }
        default:
            throw AdminTransferError("give exactly one of \(names)")
        }
    }

    var description: String {
        switch self {
        case .sqlite(let path): path
        case .postgres(let url, let schema): "\(url.description.split(separator: "?")[0]) schema \(schema ?? url.schema)"
        }
    }
}

/// Why an admin transfer did nothing.
struct AdminTransferError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}

/// A data set opened for a transfer, and what closing it (or undoing its making) takes.
final class OpenedDataSet {
    let storage: any TransferableServerStorage
    let place: DataSetPlace
    private let connector: PostgresConnector?
    /// Whether this transfer made the data set (a new file, a new PostgreSQL data set), so
    /// that a failed import removes it again.
    private let made: Bool

    private init(_ storage: any TransferableServerStorage, place: DataSetPlace, connector: PostgresConnector?, made: Bool) {
        self.storage = storage
        self.place = place
        self.connector = connector
        self.made = made
    }

    /// Opens the data set at `place` to read it: it must exist and record `schema` exactly
    /// (opening it with another would migrate it).
    static func source(_ place: DataSetPlace, schema: Schema) async throws -> OpenedDataSet {
        if case .sqlite(let path) = place, !FileManager.default.fileExists(atPath: path) {
            throw AdminTransferError("\(path) does not exist")
        }
        let opened = try await connect(place, made: false)
        do {
            guard let lines = try await opened.storage.recordedSchemaLines() else { throw AdminTransferError("\(place) holds no data set") }
            try check(lines, against: schema, place: place)
            try await opened.storage.open(schema: schema)
            return opened
        } catch {
            await opened.close()
            throw error
        }
    }

    /// Opens the place `place` to fill it: a SQLite file that does not exist yet, or a
    /// PostgreSQL schema that holds no data set or an empty one made with `schema`.
    static func target(_ place: DataSetPlace, schema: Schema) async throws -> OpenedDataSet {
        if case .sqlite(let path) = place, FileManager.default.fileExists(atPath: path) {
            throw AdminTransferError("\(path) exists; an import or copy makes a new file and never overwrites one")
        }
        var opened = try await connect(place, made: true)
        do {
            // Only a PostgreSQL schema this import makes is removed if it fails: never one
            // that held anything before (another data set, other tables).
            if let postgres = opened.storage as? PostgresServerStorage, try await postgres.schemaExists() {
                opened = OpenedDataSet(opened.storage, place: place, connector: opened.connector, made: false)
                if let lines = try await opened.storage.recordedSchemaLines() { try check(lines, against: schema, place: place) }
            }
            try await opened.storage.open(schema: schema)
            return opened
        } catch {
            await opened.discard()
            throw error
        }
    }

    private static func connect(_ place: DataSetPlace, made: Bool) async throws -> OpenedDataSet {
        switch place {
        case .sqlite(let path):
            return OpenedDataSet(try SQLiteServerStorage(.file(path: path)), place: place, connector: nil, made: made)
        case .postgres(let url, let schema):
            let connector = PostgresConnector(url)
            do {
                // As its servers order their writes (a new data set: as any server will).
                let order = try await PostgresServerStorage.recordedOrder(connector, schema: schema)
                return OpenedDataSet(try PostgresServerStorage(connector, schema: schema, order: order), place: place, connector: connector, made: made)
            } catch {
                await connector.shutdown()
                throw error
            }
        }
    }

    private static func check(_ lines: [String], against schema: Schema, place: DataSetPlace) throws(AdminTransferError) {
        guard lines != schema.describedLines else { return }
        throw AdminTransferError(
            "\(place) was made for another schema than the one given (give --schema with the schema its servers serve it with; "
                + "a newer version migrates it when a server opens it first)")
    }

    func close() async {
        await storage.close()
        await connector?.shutdown()
    }

    /// A server on the PostgreSQL data set at `url` (which must record `schema`), for the
    /// commands that go through one (compaction), and its connector to shut down after it.
    static func server(_ url: PostgresURL, schema name: String?, schema: Schema) async throws -> (RevisionServer, PostgresConnector) {
        let connector = PostgresConnector(url)
        do {
            let storage = try PostgresServerStorage(connector, schema: name, order: try await PostgresServerStorage.recordedOrder(connector, schema: name))
            guard let lines = try await storage.recordedSchemaLines() else { throw AdminTransferError("\(DataSetPlace.postgres(url, schema: name)) holds no data set") }
            try check(lines, against: schema, place: .postgres(url, schema: name))
            return (try await RevisionServer(storage: storage, schema: schema), connector)
        } catch {
            await connector.shutdown()
            throw error
        }
    }

    /// Closes it and, when this transfer made it, removes it: a failed import leaves nothing.
    func discard() async {
        await storage.close()
        if made {
            switch place {
            case .sqlite(let path):
                for suffix in ["", "-wal", "-shm", "-journal"] { try? FileManager.default.removeItem(atPath: path + suffix) }
            case .postgres(let url, let schema):
                let name = schema ?? url.schema
                if name != "public" { try? await connector?.removeDataSet(named: name) }
            }
        }
        await connector?.shutdown()
    }
}

/// The transfers themselves, each with its storages opened.
enum AdminTransfer {
    /// Writes the data set `source` holds, read in one read transaction, as JSON lines to `out`.
    nonisolated(nonsending) static func export<Source: TransferableServerStorage>(
        _ source: Source, schema: Schema, to out: LineWriter
    ) async throws -> (header: DataSetHeader?, counts: DataSetCounts) {
        try await source.read {
            let reader = DataSetReader(source, schema: schema)
            var header: DataSetHeader?, counts = DataSetCounts()
            while let item = try await reader.next() {
                if case .header(let head) = item { header = head }
                if case .end(let end) = item { counts = end }
                try out.write(DataSetLines.encode(item, schema: schema))
            }
            return (header, counts)
        }
    }

    /// Fills `target` from the JSON lines of `lines`.
    nonisolated(nonsending) static func `import`<Target: TransferableServerStorage>(
        _ lines: LineReader, into target: Target, schema: Schema
    ) async throws -> DataSetCounts {
        try await DataSetImport.run(into: target, schema: schema) {
            guard let line = try lines.next() else { return nil }
            do throws(DataSetTransferError) { return try DataSetLines.decode(line, schema: schema) } catch {
                throw DataSetTransferError("\(lines.name), line \(lines.number): \(error.message)")
            }
        }
    }

    /// Copies `source`'s data set, read in one read transaction, into `target`, in one write transaction.
    nonisolated(nonsending) static func copy<Source: TransferableServerStorage>(
        _ source: Source, into target: any TransferableServerStorage, schema: Schema
    ) async throws -> DataSetCounts {
        try await source.read {
            let reader = DataSetReader(source, schema: schema)
            return try await fill(target, schema: schema) { try await reader.next() }
        }
    }

    private nonisolated(nonsending) static func fill<Target: TransferableServerStorage>(
        _ target: Target, schema: Schema, from next: nonisolated(nonsending) () async throws -> DataSetItem?
    ) async throws -> DataSetCounts {
        try await DataSetImport.run(into: target, schema: schema, from: next)
    }

    /// The schema of `--schema`, or the league schema `serve` uses without one.
    static func schema(_ path: String?) throws(AdminTransferError) -> Schema {
        guard let path else { return LeagueSchema.schema }
        do { return try SchemaDocument.load(contentsOf: path) } catch { throw AdminTransferError("bad schema file \(path): \(error)") }
    }

    /// "1,234 records (Player 1,000, Team 234) and 3,456 rows of sync metadata".
    static func summary(_ counts: DataSetCounts) -> String {
        let entities = counts.records.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", ")
        let rows = counts.tables.values.reduce(0, +)
        return "\(counts.totalRecords) records (\(entities)) and \(rows) rows of sync metadata"
    }
}
