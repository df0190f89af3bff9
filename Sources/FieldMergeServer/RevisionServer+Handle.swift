import FieldMerge
import FieldMergeProtocol
import FieldMergeSQLite

/// A request the server cannot process at all (answered with HTTP 400 and no change).
public struct SyncServerError: Error, Equatable, Sendable, CustomStringConvertible {
    public enum Code: String, Sendable { case badRequest, storage }
    public var code: Code
    public var message: String
    public var description: String { "\(code.rawValue): \(message)" }
}

extension RevisionServer {
    /// Answers one request: first what the client missed since its `maxRevision` (one change
    /// set, at most `limit` records, ending on a revision boundary, `hasMore` when cut), then
    /// one change set per change set it sent, in order, confirmed or marked as a conflict with
    /// the server's truth.
    ///
    /// A request with change sets whose `clientID` and `requestID` equal that client's
    /// previous such request is a retry whose answer was lost: it gets the same answer again and changes nothing. The
    /// whole request is one transaction (each change set a savepoint in it), so a crash never
    /// leaves change sets committed without the answer that a retry would need.
    public func handle(_ request: SyncRequest) throws(SyncServerError) -> SyncResponse {
        let savedRevision = maxRevision, savedClock = clock
        do {
            // Only requests that change something are remembered: a pure catch-up must read the
            // log anew each time.
            let remembered = !request.changeSets.isEmpty
            if remembered, let client = request.clientID, let id = request.requestID, let replay = try reply(client: client, request: id) {
                return replay
            }
            return try database.transaction(.immediate) { () throws -> SyncResponse in
                let limit = max(1, request.limit ?? options.defaultPageLimit)
                let page = try catchUp(after: request.maxRevision, limit: limit)
                var answers: [ChangeSet] = page.changeSet.map { [$0] } ?? []
                var idMap: [String: [Int64: Int64]] = [:]
                for changeSet in request.changeSets {
                    answers.append(try apply(changeSet, idMap: &idMap))
                }
                let response = SyncResponse(maxRevision: page.hasMore ? page.end : maxRevision, changeSets: answers, hasMore: page.hasMore)
                if remembered, let client = request.clientID, let id = request.requestID {
                    try database.run(
                        "INSERT OR REPLACE INTO \"__fm_replies\" (\"client\", \"request\", \"response\") VALUES (?, ?, ?)",
                        [.text(client), .text(id), .blob(codec.encode(response))])
                }
                return response
            }
        } catch let error as SyncServerError {
            (maxRevision, clock) = (savedRevision, savedClock)
            throw error
        } catch let error as SQLiteError {
            (maxRevision, clock) = (savedRevision, savedClock)
            throw SyncServerError(code: .storage, message: error.description)
        } catch {
            (maxRevision, clock) = (savedRevision, savedClock)
            throw SyncServerError(code: .badRequest, message: "\(error)")
        }
    }

    /// The stored answer to `client`'s last request, if `request` is that request.
    private func reply(client: String, request: String) throws -> SyncResponse? {
        let statement = try database.statement(
            "SELECT \"response\" FROM \"__fm_replies\" WHERE \"client\" = ? AND \"request\" = ?")
        defer { statement.reset() }
        try statement.bind(client, at: 1)
        try statement.bind(request, at: 2)
        guard try statement.step() else { return nil }
        return try codec.decodeResponse(statement.blob(0))
    }

    // MARK: Catch-up

    struct Page { var changeSet: ChangeSet?; var end: Int64; var hasMore: Bool }

    /// The records changed after `revision`, read from the log in revision order: at most
    /// `limit`, ending on a revision boundary (a revision larger than `limit` comes whole).
    func catchUp(after revision: Int64, limit: Int) throws -> Page {
        guard let first = try logRevision(after: revision, offset: 0) else {
            return Page(changeSet: nil, end: revision, hasMore: false)
        }
        var end = maxRevision
        if let cut = try logRevision(after: revision, offset: limit) {
            // Row limit + 1 exists: end before its revision, or take that revision whole
            // when it is the only one in the page.
            let last = try logRevision(after: revision, offset: limit - 1) ?? cut
            end = last < cut ? last : (first < cut ? cut - 1 : cut)
        }
        let hasMore = try logRevision(after: end, offset: 0) != nil
        var entities: [EntityChanges] = []
        for entity in schema.entities {
            guard let table = tables[entity.name] else { continue }
            var changes = EntityChanges(entity: entity.name)
            let alive = try database.statement(table.changedAlive)
            defer { alive.reset() }
            try alive.bind([.text(entity.name), .integer(revision), .integer(end)])
            while try alive.step() {
                let row = try decodeRow(alive, table, fieldRevisions: false)
                if row.created > revision { changes.create.append(row.record.id) } else { changes.update.append(row.record.id) }
                changes.records.append(wireRecord(row, table: table))
            }
            let deleted = try database.statement(table.changedDeleted)
            defer { deleted.reset() }
            try deleted.bind([.text(entity.name), .integer(revision), .integer(end)])
            while try deleted.step() {
                let id = deleted.int64(0)
                changes.delete.append(id)
                let tombstone = try Self.tombstone(deleted, column: 2, entity: entity.name, id: id)
                changes.records.append(deletedRecord(id, table: table, revision: deleted.int64(1), tombstone: tombstone))
            }
            if !changes.records.isEmpty { entities.append(changes) }
        }
        if hasMore { try includeParents(of: &entities, after: revision, end: end) }
        return Page(changeSet: ChangeSet(entities: entities, conflict: nil), end: end, hasMore: hasMore)
    }

    /// The revision of the log's row number `offset` (from 0) after `revision`, in revision order.
    private func logRevision(after revision: Int64, offset: Int) throws(SQLiteError) -> Int64? {
        let value = try database.scalar(
            "SELECT \"revision\" FROM \"__fm_log\" WHERE \"revision\" > ? ORDER BY \"revision\" LIMIT 1 OFFSET ?",
            [.integer(revision), .integer(Int64(offset))])
        if case .integer(let found)? = value { return found }
        return nil
    }

    func wireRecord(_ row: ServerRow, table: ServerTable, oldID: Int64? = nil) -> WireRecord {
        WireRecord(
            id: row.record.id, present: table.entity.allFields, values: row.record.values, stamps: row.record.stamps,
            revision: row.revision, oldID: oldID)
    }

    /// A deleted record on the wire: no attributes, its revision, and the tombstone's stamp
    /// as every field's stamp (which travels once, under `"*"`).
    func deletedRecord(_ id: Int64, table: ServerTable, revision: Int64, tombstone: Stamp?) -> WireRecord {
        let count = table.entity.fields.count
        return WireRecord(
            id: id, present: FieldMask(), values: ContiguousArray(repeating: .null, count: count),
            stamps: tombstone.map { ContiguousArray(repeating: $0, count: count) }, revision: revision, oldID: nil)
    }

    /// The tombstone stamp in `column` of the row `statement` stands on.
    static func tombstone(_ statement: Statement, column: Int32, entity: String, id: Int64) throws(SQLiteError) -> Stamp {
        let decoded: Result<ContiguousArray<Stamp>, RecordCodingError> = statement.withBlob(column) { bytes in
            Result { () throws(RecordCodingError) in try RecordCoding.decodeStamps(bytes, count: 1) }
        }
        guard case .success(let stamps) = decoded, let stamp = stamps.first else {
            throw SQLiteError(code: 11, message: "the tombstone of \(entity)#\(id) is damaged")
        }
        return stamp
    }
}
