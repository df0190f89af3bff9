import FieldMerge

/// Reads a whole data set, one ``DataSetItem`` at a time, a page of rows per storage call.
///
/// Call ``next()`` inside one ``ServerStorage/read(_:)`` of `storage`, opened with the
/// schema the data set records: every item then comes from one committed state while servers
/// go on serving it.
public final class DataSetReader<Storage: TransferableServerStorage> {
    private let storage: Storage
    private let schema: Schema
    private let page: Int
    private var stage = Stage.header
    private var buffered: [DataSetItem] = []
    private var position = 0
    private var counts = DataSetCounts()

    private enum Stage {
        case header
        case table(Int, after: [TransferCell]?)
        case entity(Int, after: Int64)
        case end
        case done
    }

    /// - Parameters:
    ///   - storage: The data set, opened with `schema`.
    ///   - schema: The schema it records.
    ///   - page: Rows or records per storage call.
    public init(_ storage: Storage, schema: Schema, page: Int = 2_000) {
        self.storage = storage
        self.schema = schema
        self.page = max(1, page)
    }

    /// The next item; nil after ``DataSetItem/end(_:)``.
    public nonisolated(nonsending) func next() async throws -> DataSetItem? {
        while position == buffered.count {
            buffered.removeAll(keepingCapacity: true)
            position = 0
            guard try await refill() else { return nil }
        }
        defer { position += 1 }
        return buffered[position]
    }

    /// Fills the buffer from the current stage, moving on while a stage has nothing more.
    private nonisolated(nonsending) func refill() async throws -> Bool {
        switch stage {
        case .header:
            // Opened with `schema`, the data set records its lines.
            let state = try await storage.state()
            buffered = [.header(DataSetHeader(schemaLines: schema.describedLines, schemaVersion: schema.version, revision: state.maxRevision))]
            stage = .table(0, after: nil)
        case .table(let index, let after):
            guard index < TransferTable.all.count else {
                stage = .entity(0, after: Int64.min)
                return true
            }
            let table = TransferTable.all[index]
            if after == nil, table.optional, try await !storage.hasTable(table) {
                stage = .table(index + 1, after: nil)
                return true
            }
            let rows = try await storage.tableRows(table, after: after, limit: page)
            if !rows.isEmpty { counts.tables[table.name, default: 0] += rows.count }
            buffered = rows.map { .row(table, $0) }
            stage = rows.count < page ? .table(index + 1, after: nil) : .table(index, after: Array(rows[rows.count - 1].prefix(table.keyCount)))
        case .entity(let index, let after):
            guard index < schema.entities.count else {
                stage = .end
                return true
            }
            let entity = ServerEntity(schema.entities[index], position: index)
            let rows = try await storage.records(entity, after: after, limit: page)
            if !rows.isEmpty { counts.records[entity.name, default: 0] += rows.count }
            buffered = rows.map { .record(entity: index, $0) }
            stage = rows.count < page ? .entity(index + 1, after: Int64.min) : .entity(index, after: rows[rows.count - 1].record.id)
        case .end:
            buffered = [.end(counts)]
            stage = .done
        case .done:
            return false
        }
        return true
    }
}
