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
/// PostgreSQL's limit of parameters per statement. A savepoint rolled back or a transaction
/// ended drops what is held (it was written after the last statement sent).
struct PendingRecords {
    enum Kind { case write, delete }
    let kind: Kind
    let position: Int
    /// The records in the run.
    var ids: Set<Int64> = []
    /// The entity's name, then each record's parameters.
    var binds: PostgresBindings
    /// Parameters per record.
    let width: Int

    /// PostgreSQL takes at most 65,535 parameters per statement.
    static let maxBinds = 65_535

    /// Whether the record `id` can join the run of `kind` on entity `position`.
    func takes(_ kind: Kind, _ position: Int, _ id: Int64) -> Bool {
        kind == self.kind && position == self.position && !ids.contains(id) && 1 + (ids.count + 1) * width <= Self.maxBinds
    }
}

extension PostgresServerStorage {
    public nonisolated(nonsending) func write(_ row: ServerRow, of entity: ServerEntity) async throws {
        windowEntities = nil
        let table = table(entity)
        try await hold(.write, entity, id: row.record.id, width: table.sql.columns.count)
        do {
            try Self.bind(row, into: &pending!.binds)
        } catch {
            // A value it cannot store: the request fails, and what is held goes with it.
            pending = nil
            throw error
        }
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
        windowEntities = nil
        try await hold(.delete, entity, id: id, width: 3)
        pending!.binds.append(id)
        pending!.binds.append(revision)
        pending!.binds.append(ByteBuffer(bytes: ServerRow.encodeStamps([tombstone])))
    }

    /// Makes room for record `id` in the run held: sends the run first when `id` cannot join it.
    private nonisolated(nonsending) func hold(_ kind: PendingRecords.Kind, _ entity: ServerEntity, id: Int64, width: Int) async throws {
        if let held = pending, !held.takes(kind, entity.position, id) { try await sendPending() }
        if pending == nil {
            var binds = PostgresBindings(capacity: 1 + width)
            binds.append(entity.name)
            pending = PendingRecords(kind: kind, position: entity.position, binds: binds, width: width)
        }
        pending!.ids.insert(id)
    }

    /// Sends the run held, if any, as one statement.
    nonisolated(nonsending) func sendPending() async throws {
        guard let held = pending else { return }
        pending = nil
        let table = tables[held.position]
        let sql = held.kind == .write ? table.insertAndLog(rows: held.ids.count) : table.deleteAndLog(rows: held.ids.count)
        try await send(sql, held.binds)
    }
}
