import FieldMerge

/// Fills a storage that holds no data set yet with one read by a ``DataSetReader`` (from
/// another storage or from a file), in one write transaction: all of it, or nothing.
public enum DataSetImport {
    /// Imports the items `next` gives, from a header to an end, into `storage`.
    ///
    /// - Parameters:
    ///   - storage: Opened with `schema`; it must hold nothing yet (revision 0, no record,
    ///     no tombstone).
    ///   - schema: The schema the data set was made for: the header's lines must be its
    ///     `Schema/describedLines`.
    ///   - batch: Rows or records per insert.
    ///   - next: The items, in the order ``DataSetReader`` gives them; nil after the last.
    /// - Returns: How many rows and records were imported.
    /// - Throws: ``DataSetTransferError`` for a header, row or record that does not fit, a
    ///   data set that ends before its counts or whose counts differ from what came, or a
    ///   storage that already holds a data set; the storage's own errors. Nothing is kept.
    public nonisolated(nonsending) static func run<Storage: TransferableServerStorage>(
        into storage: Storage, schema: Schema, batch: Int = 2_000,
        from next: nonisolated(nonsending) () async throws -> DataSetItem?
    ) async throws -> DataSetCounts {
        try await storage.write {
            var filling = Filling(storage: storage, schema: schema, batch: max(1, batch))
            guard case .header(let header)? = try await next() else { throw DataSetTransferError("the data set does not begin with its header") }
            try filling.check(header)
            try await filling.checkEmpty()
            while let item = try await next() {
                switch item {
                case .header: throw DataSetTransferError("a second header")
                case .row(let table, let row): try await filling.add(row, to: table)
                case .record(let entity, let row): try await filling.add(row, of: entity)
                case .end(let counts):
                    try await filling.flush()
                    guard counts.withoutZeros == filling.counts.withoutZeros else {
                        throw DataSetTransferError("the data set says it holds \(describe(counts)) but \(describe(filling.counts)) came")
                    }
                    guard try await next() == nil else { throw DataSetTransferError("something follows the data set's last line") }
                    _ = try await storage.state()
                    return counts
                }
            }
            throw DataSetTransferError("the data set ends before its last line (a truncated file?) after \(describe(filling.counts))")
        }
    }

    static func describe(_ counts: DataSetCounts) -> String {
        let parts = (counts.records.sorted { $0.key < $1.key }.map { "\($0.value) \($0.key) records" })
            + counts.tables.sorted { $0.key < $1.key }.map { "\($0.value) rows of \($0.key)" }
        return parts.isEmpty ? "nothing" : parts.joined(separator: ", ")
    }

    /// What an import has taken so far, and what it holds back for the next insert.
    private struct Filling<Storage: TransferableServerStorage> {
        let storage: Storage
        let schema: Schema
        let batch: Int
        var counts = DataSetCounts()
        var cleared: Set<String> = []
        var rows: (table: TransferTable, rows: [[TransferCell]])?
        var records: (entity: Int, rows: [ServerRow])?

        init(storage: Storage, schema: Schema, batch: Int) {
            self.storage = storage
            self.schema = schema
            self.batch = batch
        }

        func check(_ header: DataSetHeader) throws(DataSetTransferError) {
            guard header.format == DataSetHeader.currentFormat else {
                throw DataSetTransferError("the data set is in transfer format \(header.format); this version reads format \(DataSetHeader.currentFormat)")
            }
            let expected = schema.describedLines
            guard header.schemaLines == expected else {
                let line = zip(header.schemaLines, expected).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? min(header.schemaLines.count, expected.count)
                let theirs = line < header.schemaLines.count ? header.schemaLines[line] : "(no line)"
                let ours = line < expected.count ? expected[line] : "(no line)"
                throw DataSetTransferError(
                    "the data set was made for another schema: its line \(line + 1) is \(theirs.debugDescription), the schema given has \(ours.debugDescription)")
            }
        }

        nonisolated(nonsending) func checkEmpty() async throws {
            let state = try await storage.state()
            var holds = state.maxRevision != 0
            if !holds { holds = try await !storage.tableRows(.deleted, after: nil, limit: 1).isEmpty }
            for (position, entity) in schema.entities.enumerated() where !holds {
                holds = try await !storage.records(ServerEntity(entity, position: position), after: Int64.min, limit: 1).isEmpty
            }
            if holds { throw DataSetTransferError("the target already holds a data set (revision \(state.maxRevision)); import only into an empty one") }
        }

        nonisolated(nonsending) mutating func add(_ row: [TransferCell], to table: TransferTable) async throws {
            guard table.accepts(row) else { throw DataSetTransferError("a row of \(table.name) has the wrong number or kinds of values") }
            if let held = rows, held.table != table || held.rows.count >= batch { try await flush() }
            if records != nil { try await flush() }
            if !cleared.contains(table.name) {
                try await storage.clearTable(table)
                cleared.insert(table.name)
            }
            if rows == nil { rows = (table, []) }
            rows!.rows.append(row)
            counts.tables[table.name, default: 0] += 1
        }

        nonisolated(nonsending) mutating func add(_ row: ServerRow, of position: Int) async throws {
            guard schema.entities.indices.contains(position) else { throw DataSetTransferError("a record of an entity the schema lacks") }
            let entity = schema.entities[position]
            do {
                try row.record.validate(against: entity)
            } catch {
                throw DataSetTransferError("record \(row.record.id) of \(entity.name): \(error)")
            }
            guard row.record.id > 0, row.record.tombstone == nil, row.fieldRevisions.map({ $0.count == entity.fields.count }) ?? true else {
                throw DataSetTransferError("record \(row.record.id) of \(entity.name) is not a stored record (id, tombstone or field revisions)")
            }
            if let held = records, held.entity != position || held.rows.count >= batch { try await flush() }
            if rows != nil { try await flush() }
            if records == nil { records = (position, []) }
            records!.rows.append(row)
            counts.records[entity.name, default: 0] += 1
        }

        /// Inserts what is held.
        nonisolated(nonsending) mutating func flush() async throws {
            if let held = rows {
                rows = nil
                try await storage.insertRows(held.rows, into: held.table)
            }
            if let held = records {
                records = nil
                try await storage.insertRecords(held.rows, of: ServerEntity(schema.entities[held.entity], position: held.entity))
            }
        }
    }
}
