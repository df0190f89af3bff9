import FieldMerge
@testable import FieldMergeServer

/// A storage that forwards every call to `base` and counts the calls a request makes of the
/// records and the log: what grows with a request's records if the server asks per record.
final class CountingStorage: ServerStorage {
    let base: any ServerStorage
    /// Calls by name, since the last ``reset()``.
    private(set) var calls: [String: Int] = [:]

    /// Whether the server groups writes over it: `base`'s answer unless told.
    let groupsWrites: Bool

    init(_ base: any ServerStorage, groupsWrites: Bool? = nil) {
        self.base = base
        self.groupsWrites = groupsWrites ?? base.groupsWrites
    }

    var total: Int { calls.values.reduce(0, +) }
    func reset() { calls = [:] }
    private func count(_ name: String) { calls[name, default: 0] += 1 }

    var olderSchemas: [OlderSchema] { base.olderSchemas }
    var migrations: [SchemaChange] { base.migrations }

    nonisolated(nonsending) func open(schema: Schema) async throws { try await base.open(schema: schema) }
    nonisolated(nonsending) func write<T>(_ body: nonisolated(nonsending) () async throws -> T) async throws -> T {
        count("write transaction")
        return try await base.write(body)
    }
    nonisolated(nonsending) func read<T>(_ body: nonisolated(nonsending) () async throws -> T) async throws -> T {
        count("read transaction")
        return try await base.read(body)
    }
    nonisolated(nonsending) func savepoint<T>(_ body: nonisolated(nonsending) () async throws -> T) async throws -> T {
        count("savepoint")
        return try await base.savepoint(body)
    }
    nonisolated(nonsending) func state() async throws -> ServerState {
        count("state")
        return try await base.state()
    }
    nonisolated(nonsending) func saveState(_ state: ServerState) async throws {
        count("saveState")
        try await base.saveState(state)
    }
    nonisolated(nonsending) func nextID(_ entity: ServerEntity) async throws -> Int64 {
        count("nextID")
        return try await base.nextID(entity)
    }
    nonisolated(nonsending) func row(_ entity: ServerEntity, id: Int64) async throws -> ServerRow? {
        count("row")
        return try await base.row(entity, id: id)
    }
    nonisolated(nonsending) func exists(_ entity: ServerEntity, id: Int64) async throws -> Bool {
        count("exists")
        return try await base.exists(entity, id: id)
    }
    nonisolated(nonsending) func write(_ row: ServerRow, of entity: ServerEntity) async throws {
        count("write")
        try await base.write(row, of: entity)
    }
    nonisolated(nonsending) func delete(_ entity: ServerEntity, id: Int64, tombstone: Stamp, revision: Int64) async throws {
        count("delete")
        try await base.delete(entity, id: id, tombstone: tombstone, revision: revision)
    }
    nonisolated(nonsending) func deletion(_ entity: ServerEntity, id: Int64) async throws -> Deletion? {
        count("deletion")
        return try await base.deletion(entity, id: id)
    }
    nonisolated(nonsending) func forgetDeletion(_ entity: ServerEntity, id: Int64) async throws {
        count("forgetDeletion")
        try await base.forgetDeletion(entity, id: id)
    }
    nonisolated(nonsending) func referencing(_ id: Int64, from entity: ServerEntity, field: Int) async throws -> [Int64] {
        count("referencing")
        return try await base.referencing(id, from: entity, field: field)
    }
    nonisolated(nonsending) func logRevision(after revision: Int64, offset: Int) async throws -> Int64? {
        count("logRevision")
        return try await base.logRevision(after: revision, offset: offset)
    }
    nonisolated(nonsending) func logBounds(after revision: Int64, limit: Int, latest: Int64) async throws -> LogBounds {
        count("logBounds")
        return try await base.logBounds(after: revision, limit: limit, latest: latest)
    }
    nonisolated(nonsending) func loggedRevision(_ entity: ServerEntity, id: Int64) async throws -> Int64? {
        count("loggedRevision")
        return try await base.loggedRevision(entity, id: id)
    }
    nonisolated(nonsending) func logged(_ entity: ServerEntity, ids: [Int64], after revision: Int64) async throws -> [Int64] {
        count("logged")
        return try await base.logged(entity, ids: ids, after: revision)
    }
    nonisolated(nonsending) func changes(_ entity: ServerEntity, after: Int64, through: Int64) async throws -> (alive: [ServerRow], deleted: [Deletion]) {
        count("changes")
        return try await base.changes(entity, after: after, through: through)
    }
    nonisolated(nonsending) func reply(client: String, request: String) async throws -> StoredReplyRow? {
        count("reply")
        return try await base.reply(client: client, request: request)
    }
    nonisolated(nonsending) func reply(client: String, request: String, before catchUp: CatchUpWindow) async throws -> StoredReplyRow? {
        count("reply")
        return try await base.reply(client: client, request: request, before: catchUp)
    }
    nonisolated(nonsending) func storeReply(_ reply: ReplyToStore, pruning: ReplyPruning) async throws {
        count("storeReply")
        try await base.storeReply(reply, pruning: pruning)
    }
    nonisolated(nonsending) func rows(_ entity: ServerEntity, ids: [Int64]) async throws -> [Int64: ServerRow] {
        count("rows")
        return try await base.rows(entity, ids: ids)
    }
    nonisolated(nonsending) func deletions(_ entity: ServerEntity, ids: [Int64]) async throws -> [Int64: Deletion] {
        count("deletions")
        return try await base.deletions(entity, ids: ids)
    }
    nonisolated(nonsending) func existing(_ entity: ServerEntity, ids: [Int64]) async throws -> Set<Int64> {
        count("existing")
        return try await base.existing(entity, ids: ids)
    }
    nonisolated(nonsending) func loggedRevisions(_ entity: ServerEntity, ids: [Int64]) async throws -> [Int64: Int64] {
        count("loggedRevisions")
        return try await base.loggedRevisions(entity, ids: ids)
    }
    nonisolated(nonsending) func nextIDs(_ entity: ServerEntity, count: Int) async throws -> [Int64] {
        self.count("nextIDs")
        return try await base.nextIDs(entity, count: count)
    }
    nonisolated(nonsending) func close() async { await base.close() }
}
