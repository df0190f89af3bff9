import FieldMerge
import FieldMergeServer
import PostgresNIO

/// The batched calls, one statement each whatever the number of ids: the ids travel as one
/// bound `bigint[]` (`= ANY($n)`).
extension PostgresServerStorage {
    public nonisolated(nonsending) func rows(_ entity: ServerEntity, ids: [Int64]) async throws -> [Int64: ServerRow] {
        try await rows(entity, ids: ids, lock: "")
    }

    /// With writes in parallel, the rows are locked (in id order, so that two writes lock
    /// them in one order) and must not have been written by a later revision
    /// (a write that finds one written by a later revision runs again).
    public nonisolated(nonsending) func rowsToChange(_ entity: ServerEntity, ids: [Int64]) async throws -> [Int64: ServerRow] {
        try await rows(entity, ids: ids, lock: locksRows ? " ORDER BY \"id\" FOR UPDATE" : "")
    }

    /// With writes in parallel, the rows are locked against change (`FOR KEY SHARE`, as a
    /// reference check locks them), in id order; what later revision wrote them does not matter.
    public nonisolated(nonsending) func rowsToReference(_ entity: ServerEntity, ids: [Int64]) async throws -> [Int64: ServerRow] {
        try await rows(entity, ids: ids, lock: locksRows ? " ORDER BY \"id\" FOR KEY SHARE" : "", checked: false)
    }

    public nonisolated(nonsending) func deletionsToChange(_ entity: ServerEntity, ids: [Int64]) async throws -> [Int64: Deletion] {
        try await deletions(entity, ids: ids, lock: locksRows ? " ORDER BY \"id\" FOR UPDATE" : "")
    }

    private nonisolated(nonsending) func rows(_ entity: ServerEntity, ids: [Int64], lock: String, checked: Bool = true) async throws -> [Int64: ServerRow] {
        guard !ids.isEmpty else { return [:] }
        let table = table(entity)
        var rows: [Int64: ServerRow] = [:]
        for row in try await run(table.selectAny + lock, Self.binds(ids: ids)) {
            let decoded = try Self.decodeRow(row, table, fieldRevisions: true)
            if checked && !lock.isEmpty { try checkNotWrittenAfter(decoded.revision) }
            rows[decoded.record.id] = decoded
        }
        return rows
    }

    public nonisolated(nonsending) func deletions(_ entity: ServerEntity, ids: [Int64]) async throws -> [Int64: Deletion] {
        try await deletions(entity, ids: ids, lock: "")
    }

    private nonisolated(nonsending) func deletions(_ entity: ServerEntity, ids: [Int64], lock: String) async throws -> [Int64: Deletion] {
        guard !ids.isEmpty else { return [:] }
        var deletions: [Int64: Deletion] = [:]
        for row in try await run(
            "SELECT \"id\", \"revision\", \"stamp\", \"root\" FROM \(named("__fm_deleted")) WHERE \"entity\" = $1 AND \"id\" = ANY($2)" + lock,
            Self.binds(entity.name, ids: ids))
        {
            let deletion = try Self.decodeDeletion(row, entity: entity)
            if !lock.isEmpty { try checkNotWrittenAfter(deletion.revision) }
            deletions[deletion.id] = deletion
        }
        return deletions
    }

    public nonisolated(nonsending) func existing(_ entity: ServerEntity, ids: [Int64]) async throws -> Set<Int64> {
        guard !ids.isEmpty else { return [] }
        let lock = locksRows ? " ORDER BY \"id\" FOR KEY SHARE" : ""
        return Set(try await run(table(entity).existsAny + lock, Self.binds(ids: ids)).map { try $0.decode(Int64.self) })
    }

    public nonisolated(nonsending) func loggedRevisions(_ entity: ServerEntity, ids: [Int64]) async throws -> [Int64: Int64] {
        guard !ids.isEmpty else { return [:] }
        var revisions: [Int64: Int64] = [:]
        for row in try await run(
            "SELECT \"id\", \"revision\" FROM \(named("__fm_log")) WHERE \"entity\" = $1 AND \"id\" = ANY($2)", Self.binds(entity.name, ids: ids))
        {
            let (id, revision) = try row.decode((Int64, Int64).self)
            revisions[id] = revision
        }
        return revisions
    }

    /// `first`, if any, then `ids` as one `bigint[]` parameter (never one parameter per id).
    static func binds(_ first: String? = nil, ids: [Int64]) -> PostgresBindings {
        var binds = PostgresBindings(capacity: 2)
        if let first { binds.append(first) }
        binds.append(ids)
        return binds
    }

    /// One round trip for any count: the counter moves on by `count`, or starts after the
    /// largest id in the table.
    /// In a write transaction the counter is read once (it starts after the largest id alive
    /// or deleted: an id a tombstone remembers is never given again) and moved on here; it is
    /// written back before the commit, so ids cost no round trip after the first.
    public nonisolated(nonsending) func nextIDs(_ entity: ServerEntity, count: Int) async throws -> [Int64] {
        guard count > 0 else { return [] }
        let ids = try await givenIDs(entity, count: count)
        session.freshIDs[entity.position, default: []].formUnion(ids)
        return ids
    }

    private nonisolated(nonsending) func givenIDs(_ entity: ServerEntity, count: Int) async throws -> [Int64] {
        if locksRows { return try await reservedIDs(entity, count: count) }
        guard lockedState != nil else { throw ServerError(.storage, "PostgreSQL: ids are given out in a write transaction only") }
        if idCounters[entity.position] == nil {
            // Sent past what is held and past a savepoint not sent yet: a read that changes
            // nothing, and that the rows held cannot change (none of this entity's ids was
            // given in this transaction yet, and a held delete moves an id from the table to
            // the tombstones, where it still counts).
            let rows = try await send(
                "SELECT coalesce((SELECT \"next\" FROM \(named("__fm_ids")) WHERE \"entity\" = $1 FOR UPDATE), "
                    + "GREATEST((SELECT coalesce(max(\"id\"), 0) FROM \(table(entity).table)), "
                    + "(SELECT coalesce(max(\"id\"), 0) FROM \(named("__fm_deleted")) WHERE \"entity\" = $1)) + 1)",
                Self.binds(entity.name), prepared: true)
            guard let cell = rows.first?.first, cell.bytes != nil else {
                throw ServerError(.corrupt, "the id counter of \(entity.name) is damaged")
            }
            let next = try Self.decode(cell, as: Int64.self)
            idCounters[entity.position] = (next, next - 1)
        }
        let first = idCounters[entity.position]!.next
        idCounters[entity.position]!.next = first + Int64(count)
        return Array(first..<first + Int64(count))
    }

    /// Writes back the id counters this transaction moved and has not written yet, in one
    /// statement.
    nonisolated(nonsending) func saveIDCounters() async throws {
        let moved = takeMovedIDCounters()
        idCounters = [:]
        guard let moved else { return }
        var binds = PostgresBindings(capacity: 2)
        binds.append(moved.entities)
        binds.append(moved.next)
        try await run(idCountersUpsert(entities: "$1", next: "$2"), binds, prepared: true)
    }

    /// The id counters moved since they were read or last written, by entity name, now
    /// counted as written; nil when none moved. Whoever takes them must write them in the
    /// statement it sends next, outside any savepoint (one rolled back would undo the write
    /// while the counters stay taken).
    func takeMovedIDCounters() -> (entities: [String], next: [Int64])? {
        let moved = idCounters.filter { $0.value.next - 1 != $0.value.read }.sorted { $0.key < $1.key }
        guard !moved.isEmpty else { return nil }
        for (position, counter) in moved { idCounters[position]!.read = counter.next - 1 }
        return (moved.map { tables[$0.key].entity.name }, moved.map(\.value.next))
    }

    /// The upsert of id counters from the arrays bound at `entities` and `next` (never moving
    /// one back).
    func idCountersUpsert(entities: String, next: String) -> String {
        "INSERT INTO \(named("__fm_ids")) AS i (\"entity\", \"next\") SELECT * FROM unnest(\(entities)::TEXT[], \(next)::BIGINT[]) "
            + "ON CONFLICT (\"entity\") DO UPDATE SET \"next\" = GREATEST(i.\"next\", EXCLUDED.\"next\")"
    }
}
