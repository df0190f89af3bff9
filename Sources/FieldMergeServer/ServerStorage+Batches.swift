import FieldMerge

/// The batched calls of ``ServerStorage`` by default: one single call per id, so that a
/// storage that implements only those still works. Storages that talk to a database over the
/// network answer each in one query.
extension ServerStorage {
    public nonisolated(nonsending) func rowsToChange(_ entity: ServerEntity, ids: [Int64]) async throws -> [Int64: ServerRow] {
        try await rows(entity, ids: ids)
    }

    public nonisolated(nonsending) func rowsToReference(_ entity: ServerEntity, ids: [Int64]) async throws -> [Int64: ServerRow] {
        try await rows(entity, ids: ids)
    }

    public nonisolated(nonsending) func deletionsToChange(_ entity: ServerEntity, ids: [Int64]) async throws -> [Int64: Deletion] {
        try await deletions(entity, ids: ids)
    }

    public nonisolated(nonsending) func rows(_ entity: ServerEntity, ids: [Int64]) async throws -> [Int64: ServerRow] {
        var rows: [Int64: ServerRow] = [:]
        for id in ids where rows[id] == nil {
            if let row = try await row(entity, id: id) { rows[id] = row }
        }
        return rows
    }

    public nonisolated(nonsending) func deletions(_ entity: ServerEntity, ids: [Int64]) async throws -> [Int64: Deletion] {
        var deletions: [Int64: Deletion] = [:]
        for id in ids where deletions[id] == nil {
            if let deletion = try await deletion(entity, id: id) { deletions[id] = deletion }
        }
        return deletions
    }

    public nonisolated(nonsending) func existing(_ entity: ServerEntity, ids: [Int64]) async throws -> Set<Int64> {
        var found: Set<Int64> = []
        for id in Set(ids) {
            if try await exists(entity, id: id) { found.insert(id) }
        }
        return found
    }

    public nonisolated(nonsending) func loggedRevisions(_ entity: ServerEntity, ids: [Int64]) async throws -> [Int64: Int64] {
        var revisions: [Int64: Int64] = [:]
        for id in Set(ids) {
            if let revision = try await loggedRevision(entity, id: id) { revisions[id] = revision }
        }
        return revisions
    }

    public nonisolated(nonsending) func nextIDs(_ entity: ServerEntity, count: Int) async throws -> [Int64] {
        var ids: [Int64] = []
        ids.reserveCapacity(count)
        for _ in 0..<count { ids.append(try await nextID(entity)) }
        return ids
    }

    public nonisolated(nonsending) func logged(_ entity: ServerEntity, ids: [Int64], after revision: Int64) async throws -> [Int64] {
        let revisions = try await loggedRevisions(entity, ids: ids)
        return ids.filter { revisions[$0].map { $0 > revision } ?? false }
    }
}
