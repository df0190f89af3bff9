import FieldMerge
import FieldMergeServer
import PostgresNIO

/// Record writes and deletes held back until the storage next sends a statement, then sent
/// as one statement for each run of them on one entity (a multi-row upsert, a multi-row
/// delete), so that a change set's records cost one round trip per entity, not one each.
///
/// Nothing reads the database in between (any statement sends what is held first), so every
/// read sees every write before it, as if each had been sent at once. A run ends at another
/// entity or kind, at a record already in it (sent in order instead of merged) and at
/// PostgreSQL's limit of parameters per statement. The rows are bound when the run is sent,
/// so that a savepoint rolled back before it was sent can drop the rows written after it
/// began (``PostgresServerStorage/savepoint(_:)``); a transaction ended drops them all.
struct PendingRecords {
    enum Kind { case write, delete }
    enum Row {
        case write(ServerRow)
        case delete(id: Int64, revision: Int64, tombstone: Stamp)

        var id: Int64 {
            switch self {
            case .write(let row): row.record.id
            case .delete(let id, _, _): id
            }
        }
    }

    let kind: Kind
    let position: Int
    let entity: String
    /// The records in the run, in the order written.
    var rows: [Row] = []
    var ids: Set<Int64> = []
    /// Parameters per record.
    let width: Int
    /// Whether every record of the run is created under an id this transaction was given
    /// (``PostgresTransaction/freshIDs``) and written for the first time: no row and no log
    /// entry has its id yet, so a run bound by column is sent as plain inserts.
    var fresh = true

    /// PostgreSQL takes at most 65,535 parameters per statement.
    static let maxBinds = 65_535

    /// Whether the record `id` can join the run of `kind` on entity `position`.
    func takes(_ kind: Kind, _ position: Int, _ id: Int64) -> Bool {
        kind == self.kind && position == self.position && !ids.contains(id) && 1 + (ids.count + 1) * width <= Self.maxBinds
    }

    /// The run without the rows from `count` on.
    mutating func keep(first count: Int) {
        guard count < rows.count else { return }
        rows.removeSubrange(count...)
        ids = Set(rows.lazy.map(\.id))
    }

    /// From how many records on a run of writes is bound as one array per column
    /// (``PostgresServerTable/insertAndLogColumns``); shorter runs bind each value.
    static let columnRun = 16

    /// Rows `start..<end` of a run of writes as the entity's name and one array per column
    /// of `table`; nil when a value is not of its column's kind (then bound row by row).
    func columnBinds(from start: Int, to end: Int, table: PostgresServerTable) throws(ServerError) -> PostgresBindings? {
        let fields = table.entity.fields.count
        var columns = table.columnElements.map { PostgresColumnArray($0, capacity: end - start) }
        for held in rows[start..<end] {
            guard case .write(let row) = held, row.record.values.count == fields else { return nil }
            columns[0].append(row.record.id)
            for (index, value) in row.record.values.enumerated() {
                guard try columns[index + 1].append(value) else { return nil }
            }
            columns[fields + 1].append(bytes: ServerRow.encodeStamps(row.record.stamps))
            columns[fields + 2].append(row.revision)
            columns[fields + 3].append(row.created)
            if let revisions = row.fieldRevisions {
                columns[fields + 4].append(bytes: ServerRow.encode(revisions, revision: row.revision))
            } else {
                columns[fields + 4].appendNull()
            }
            if let root = row.root { columns[fields + 5].append(root) } else { columns[fields + 5].appendNull() }
        }
        var binds = PostgresBindings(capacity: 1 + columns.count)
        binds.append(entity)
        for column in columns { binds.append(column) }
        return binds
    }

    /// The run of the rows from `start` on: the entity's name, then each row's parameters.
    func binds(from start: Int = 0) throws(ServerError) -> PostgresBindings {
        var binds = PostgresBindings(capacity: 1 + (rows.count - start) * width)
        binds.append(entity)
        for row in rows[start...] {
            switch row {
            case .write(let row): try PostgresServerStorage.bind(row, into: &binds)
            case .delete(let id, let revision, let tombstone):
                binds.append(id)
                binds.append(revision)
                binds.append(ByteBuffer(bytes: ServerRow.encodeStamps([tombstone])))
            }
        }
        return binds
    }
}

extension PostgresServerStorage {
    public nonisolated(nonsending) func write(_ row: ServerRow, of entity: ServerEntity) async throws {
        // The transaction's state is found once (a task-local) for what runs once per record.
        let session = session
        session.windowEntities = nil
        session.prefetchedBounds = nil
        // A value it cannot store fails the request now (the row is bound when sent).
        for value in row.record.values { try Self.checkStorable(value) }
        let fresh = session.freshIDs[entity.position]?.remove(row.record.id) != nil
        try await hold(.write, entity, id: row.record.id, width: tables[entity.position].sql.columns.count, in: session)
        if !fresh { session.pending!.fresh = false }
        session.pending!.rows.append(.write(row))
        try await sendAheadWhenLarge(session)
    }

    /// Binds the columns of `row` in the order of the table's `sql.columns`.
    static func bind(_ row: ServerRow, into binds: inout PostgresBindings) throws(ServerError) {
        binds.append(row.record.id)
        for value in row.record.values { try bind(value, into: &binds) }
        binds.append(ByteBuffer(bytes: ServerRow.encodeStamps(row.record.stamps)))
        binds.append(row.revision)
        binds.append(row.created)
        if let fields = row.fieldRevisions {
            binds.append(ByteBuffer(bytes: ServerRow.encode(fields, revision: row.revision)))
        } else {
            binds.appendNull()
        }
        binds.append(row.root)
    }

    public nonisolated(nonsending) func delete(_ entity: ServerEntity, id: Int64, tombstone: Stamp, revision: Int64) async throws {
        let session = session
        session.windowEntities = nil
        session.prefetchedBounds = nil
        session.freshIDs[entity.position]?.remove(id)
        try await hold(.delete, entity, id: id, width: 3, in: session)
        session.pending!.rows.append(.delete(id: id, revision: revision, tombstone: tombstone))
        try await sendAheadWhenLarge(session)
    }

    /// Sends the run held ahead once it is large (``PendingRecords/aheadRun``), and gives the
    /// connection's loop a turn every ``PendingRecords/aheadTurn`` records of a run, which the
    /// server otherwise holds while it goes through a change set: the loop reads PostgreSQL's
    /// answer to a statement sent ahead and writes the next, and the other requests on the
    /// loop (a small write beside a large upload) get their turn.
    private nonisolated(nonsending) func sendAheadWhenLarge(_ session: PostgresTransaction) async throws {
        let count = session.pending!.rows.count
        if count >= PendingRecords.aheadRun {
            try await sendPending(ahead: true)
            await loopTurn()
        } else if count % PendingRecords.aheadTurn == 0 {
            await loopTurn()
        }
    }

    /// Makes room for record `id` in the run held: sends the run first when `id` cannot join it.
    private nonisolated(nonsending) func hold(
        _ kind: PendingRecords.Kind, _ entity: ServerEntity, id: Int64, width: Int, in session: PostgresTransaction
    ) async throws {
        if session.pending?.takes(kind, entity.position, id) == false { try await sendPending() }
        if session.pending == nil { session.pending = PendingRecords(kind: kind, position: entity.position, entity: entity.name, width: width) }
        session.pending!.ids.insert(id)
    }

    /// Sends what is held: first each savepoint begun and not sent yet, after the rows held
    /// before it began, then the rest of the run, each part as one statement; with `ahead`,
    /// every part is sent ahead (``sendAhead(_:_:)``), none waited for.
    nonisolated(nonsending) func sendPending(ahead: Bool = false) async throws {
        var sent = 0
        for index in openSavepoints.indices where !openSavepoints[index].sent {
            if let held = pending, openSavepoints[index].held > sent {
                try await sendRows(held, from: sent, to: openSavepoints[index].held, ahead: ahead)
                sent = openSavepoints[index].held
            }
            let begin = "SAVEPOINT \(openSavepoints[index].name)"
            if ahead { try sendAhead(begin, PostgresBindings()) } else { try await send(begin, PostgresBindings()) }
            openSavepoints[index].sent = true
        }
        guard let held = pending else { return }
        pending = nil
        if held.rows.count > sent { try await sendRows(held, from: sent, to: held.rows.count, ahead: ahead) }
    }

    /// Sends rows `start..<end` of `held` as one statement (`ahead`: sent ahead, unprepared).
    private nonisolated(nonsending) func sendRows(_ held: PendingRecords, from start: Int, to end: Int, ahead: Bool = false) async throws {
        var part = held
        part.keep(first: end)
        let table = tables[held.position]
        let rows = end - start
        if held.kind == .write, rows >= PendingRecords.columnRun, let binds = try held.columnBinds(from: start, to: end, table: table) {
            let sql = held.fresh ? table.insertFreshColumns : table.insertAndLogColumns
            if ahead { return try sendAhead(sql, binds) }
            try await send(sql, binds, prepared: true)
            return
        }
        let sql = held.kind == .write ? table.insertAndLog(rows: rows) : table.deleteAndLog(rows: rows)
        if ahead { return try sendAhead(sql, try part.binds(from: start)) }
        // One record, the usual small write, is prepared once per types of its parameters
        // (a NULL and a value bind different types); runs of several vary in text.
        let types = rows == 1 ? part.rows[start].parameterTypes : nil
        try await send(sql, try part.binds(from: start), prepared: types != nil, types: types ?? "")
    }
}

extension PostgresServerStorage {
    /// Record writes held, taken to be sent as the first parts of the next statement
    /// (`WITH written AS (...), logged AS (...)`) instead of a statement of their own.
    struct LeadingRows {
        var sql: String
        /// The entity's name and the rows' parameters; the statement's own follow.
        var binds: PostgresBindings
        /// A text that is the same for every such statement, worth preparing.
        var prepared: Bool
        /// The parameters' types, which name the prepared statement with its text.
        var types: String
    }

    /// Takes the rows held as ``LeadingRows``: nil, leaving them held, when nothing is held,
    /// when what is held is deletes, or when a savepoint begun after some of them waits to be
    /// sent (``sendPending()`` orders those).
    func takeLeadingRows() throws(ServerError) -> LeadingRows? {
        guard let held = pending, held.kind == .write, !held.rows.isEmpty, openSavepoints.allSatisfy(\.sent) else { return nil }
        let table = tables[held.position]
        let count = held.rows.count
        let rows: LeadingRows
        if count >= PendingRecords.columnRun, let binds = try held.columnBinds(from: 0, to: count, table: table) {
            rows = LeadingRows(sql: table.leadingInsertAndLog(rows: nil, fresh: held.fresh), binds: binds, prepared: true, types: held.fresh ? "f" : "c")
        } else {
            let types = count == 1 ? held.rows[0].parameterTypes : nil
            rows = LeadingRows(
                sql: table.leadingInsertAndLog(rows: count), binds: try held.binds(), prepared: types != nil, types: types ?? "")
        }
        pending = nil
        return rows
    }
}

extension PendingRecords.Row {
    /// A letter per parameter type of the row, as ``PendingRecords/binds(from:)`` binds it.
    var parameterTypes: String {
        switch self {
        case .delete: return "d"
        case .write(let row):
            var types = "w"
            for value in row.record.values {
                switch value {
                case .null: types += "n"
                case .integer, .date: types += "i"
                case .real: types += "r"
                case .text: types += "t"
                case .bool: types += "b"
                case .blob: types += "x"
                case .textSet: types += "s"
                }
            }
            types += row.fieldRevisions == nil ? "n" : "x"
            types += row.root == nil ? "n" : "i"
            return types
        }
    }
}
