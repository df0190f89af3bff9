import FieldMerge

/// Where a ``RevisionServer`` keeps its data set: the records with their stamps and
/// revisions, the tombstones, the change log, the id counters, the stored replies and the
/// server's state.
///
/// The server's logic (strict and merge mode, cascades, replay, paged catch-up) is written
/// once against this protocol; `SQLiteServerStorage` (FieldMergeServerSQLite) is the
/// embedded default and other databases implement the same calls. A storage belongs to one
/// server, which calls it from its own actor inside ``write(_:)`` or ``read(_:)``: one
/// request at a time, unless the storage ``readsConcurrently``.
///
/// Every requirement is `async` so that a storage can talk to a database over the network;
/// one that works in process (SQLite) completes them without suspending. Every requirement,
/// and every body it runs, is `nonisolated(nonsending)`: it runs on the caller's executor,
/// the server actor's own thread, never on Swift concurrency's shared pool (where a blocking
/// SQLite call would starve other tasks), and implementations must say so too. Errors a storage
/// throws are reported as ``ServerError/Code/storage`` with the error kept as the cause,
/// unless they are ``ServerError``s already.
public protocol ServerStorage: AnyObject {
    /// Prepares the storage for `schema`: creates what is missing, and checks that a storage
    /// made for another schema is not opened with this one.
    ///
    /// - Throws: ``ServerError/Code/schemaMismatch`` saying what differs.
    nonisolated(nonsending) func open(schema: Schema) async throws

    /// After ``open(schema:)``: the older versions of the schema whose clients the storage's
    /// data set still serves (Specs/schema.md, "Mixed-version fleets"); empty by default.
    var olderSchemas: [OlderSchema] { get }

    /// After ``open(schema:)``: what opening changed to move the data set to a newer schema
    /// version (Specs/schema.md, "Evolution"); empty by default.
    var migrations: [SchemaChange] { get }

    /// Runs `body` as one write transaction, committed when it returns and rolled back when
    /// it throws. Write transactions of all servers on one data set run one after another,
    /// so revisions commit in the order of their numbers.
    nonisolated(nonsending) func write<T>(_ body: nonisolated(nonsending) () async throws -> T) async throws -> T
    /// ``write(_:)``, told before it begins what the body may take: a storage that orders
    /// writes without one lock takes the revisions and ids first (Specs/http.md §8,
    /// "Writes in parallel"). By default ``write(_:)``.
    nonisolated(nonsending) func write<T>(reserving: WriteReservation, _ body: nonisolated(nonsending) () async throws -> T) async throws -> T

    /// Runs `body` as one read-only transaction that sees one committed state.
    nonisolated(nonsending) func read<T>(_ body: nonisolated(nonsending) () async throws -> T) async throws -> T

    /// Whether ``read(_:)`` may run while other transactions of this storage are in progress
    /// (each transaction's state kept apart, a database over the network): the server then
    /// answers requests that only read beside a write and beside each other, instead of one
    /// request at a time. False by default (SQLite: one connection, whose calls never suspend).
    var readsConcurrently: Bool { get }

    /// Whether the server should answer write requests that wait for each other in groups,
    /// one ``write(_:)`` transaction for the group (group commit): a storage whose statements
    /// are round trips to a database, where a transaction's begin, lock and commit cost as
    /// much as a small request's own work. False by default (SQLite: a transaction costs
    /// next to nothing). The answers are the same either way (Specs/http.md §8).
    var groupsWrites: Bool { get }
    /// How many write transactions (each a group, ``groupsWrites``) the server may run at once:
    /// 1, the default, runs them one after another; more only for a storage whose writes
    /// commit in any order and lock only what they change (PostgreSQL with
    /// `PostgresWriteOrder.parallel`). Each then keeps its clock and revision apart
    /// (a write context of its own).
    var concurrentWrites: Int { get }

    /// The executor the server runs on, for a storage whose I/O completes on one (a database
    /// client's event loop): each answer from the database then resumes the server where it
    /// arrived, without waking another thread. Nil, the default: a serial queue of the
    /// server's own, which a storage whose calls block (SQLite) needs.
    var executor: (any ServerExecutor)? { get }

    /// Runs `body` inside the current transaction so that its writes are undone alone when
    /// it throws (a savepoint).
    nonisolated(nonsending) func savepoint<T>(_ body: nonisolated(nonsending) () async throws -> T) async throws -> T

    /// The server's revision and clock (inside a transaction).
    nonisolated(nonsending) func state() async throws -> ServerState
    nonisolated(nonsending) func saveState(_ state: ServerState) async throws

    /// The next permanent id of `entity` (ids are never reused, even after deletes).
    nonisolated(nonsending) func nextID(_ entity: ServerEntity) async throws -> Int64

    /// The record `id` of `entity`, alive, or nil.
    nonisolated(nonsending) func row(_ entity: ServerEntity, id: Int64) async throws -> ServerRow?
    /// Whether `entity` has an alive record `id`.
    nonisolated(nonsending) func exists(_ entity: ServerEntity, id: Int64) async throws -> Bool
    /// Writes a record (insert or replace) and logs it at its revision.
    nonisolated(nonsending) func write(_ row: ServerRow, of entity: ServerEntity) async throws
    /// Removes a record, keeps its tombstone, and logs the deletion at `revision`.
    nonisolated(nonsending) func delete(_ entity: ServerEntity, id: Int64, tombstone: Stamp, revision: Int64) async throws
    /// The tombstone of a deleted record, or nil.
    nonisolated(nonsending) func deletion(_ entity: ServerEntity, id: Int64) async throws -> Deletion?
    /// Drops the tombstone of a record that is re-created under its old id (written next
    /// with ``write(_:of:)``, which logs it at its new revision).
    nonisolated(nonsending) func forgetDeletion(_ entity: ServerEntity, id: Int64) async throws
    /// The ids of the alive records of `entity` whose field `field` references `id`, ascending.
    nonisolated(nonsending) func referencing(_ id: Int64, from entity: ServerEntity, field: Int) async throws -> [Int64]

    /// The ids of at most `limit` alive records of `entity` whose text field `field` begins
    /// with `prefix`, ascending: the records that reference an attachment
    /// (Specs/attachments.md). By default a scan of the entity's records
    /// (ServerStorage+Attachments.swift).
    nonisolated(nonsending) func records(_ entity: ServerEntity, field: Int, beginningWith prefix: String, limit: Int) async throws -> [Int64]

    /// The alive records of `entity` among `ids` (missing ids and repeats allowed), by id:
    /// what ``row(_:id:)`` answers for each, in one call. By default one call each
    /// (ServerStorage+Batches.swift), as are the other batched calls below.
    nonisolated(nonsending) func rows(_ entity: ServerEntity, ids: [Int64]) async throws -> [Int64: ServerRow]
    /// The tombstones of `entity` among `ids`, by id: ``deletion(_:id:)`` for each.
    nonisolated(nonsending) func deletions(_ entity: ServerEntity, ids: [Int64]) async throws -> [Int64: Deletion]
    /// ``rows(_:ids:)`` for records the write transaction may change (what a change set
    /// updates, deletes or re-creates, and what its cascades reach): a storage whose writes run
    /// beside each other locks them to the transaction's end. By default ``rows(_:ids:)``.
    nonisolated(nonsending) func rowsToChange(_ entity: ServerEntity, ids: [Int64]) async throws -> [Int64: ServerRow]
    /// ``deletions(_:ids:)`` for records the write transaction may re-create, locked as
    /// ``rowsToChange(_:ids:)`` locks. By default ``deletions(_:ids:)``.
    nonisolated(nonsending) func deletionsToChange(_ entity: ServerEntity, ids: [Int64]) async throws -> [Int64: Deletion]
    /// ``rows(_:ids:)`` for records the write's records take their scope's root from (their
    /// parents): a storage whose writes run beside each other keeps them from being changed
    /// (not from being referenced) to the transaction's end, so that a parent moved to
    /// another root beside the write either waits for it, and then moves the new record
    /// along, or is read moved. By default ``rows(_:ids:)``.
    nonisolated(nonsending) func rowsToReference(_ entity: ServerEntity, ids: [Int64]) async throws -> [Int64: ServerRow]
    /// Of `ids`, those `entity` has alive: ``exists(_:id:)`` for each.
    nonisolated(nonsending) func existing(_ entity: ServerEntity, ids: [Int64]) async throws -> Set<Int64>
    /// The revisions at which the log holds the records `ids` of `entity`, by id:
    /// ``loggedRevision(_:id:)`` for each.
    nonisolated(nonsending) func loggedRevisions(_ entity: ServerEntity, ids: [Int64]) async throws -> [Int64: Int64]
    /// The next `count` permanent ids of `entity`, ascending: ``nextID(_:)`` `count` times.
    nonisolated(nonsending) func nextIDs(_ entity: ServerEntity, count: Int) async throws -> [Int64]

    /// The revision of the log's entry number `offset` (from 0) after `revision`, in
    /// revision order; nil past the end.
    nonisolated(nonsending) func logRevision(after revision: Int64, offset: Int) async throws -> Int64?
    /// What a catch-up page after `revision` of at most `limit` log entries needs to know of
    /// the log, at once (``LogBounds``); by default four ``logRevision(after:offset:)`` calls.
    nonisolated(nonsending) func logBounds(after revision: Int64, limit: Int, latest: Int64) async throws -> LogBounds
    /// The revision at which the log holds a record, or nil.
    nonisolated(nonsending) func loggedRevision(_ entity: ServerEntity, id: Int64) async throws -> Int64?
    /// Of `ids`, those the log holds at a revision after `revision`, in the order given; by
    /// default one ``loggedRevisions(_:ids:)`` call.
    nonisolated(nonsending) func logged(_ entity: ServerEntity, ids: [Int64], after revision: Int64) async throws -> [Int64]
    /// The records of `entity` changed after `after` up to `through`, in log order: alive
    /// ones, and deleted ones with their tombstones.
    nonisolated(nonsending) func changes(_ entity: ServerEntity, after: Int64, through: Int64) async throws -> (alive: [ServerRow], deleted: [Deletion])

    /// The stored answer to `client`'s last request, with its request's digest, if `request` names it.
    nonisolated(nonsending) func reply(client: String, request: String) async throws -> StoredReplyRow?
    /// ``reply(client:request:)``, told the catch-up the request will read next when it is no
    /// retry (``CatchUpWindow``): a storage may read that page's ``logBounds(after:limit:latest:)``
    /// with the reply, in one round trip, and answer them from what it read, as long as
    /// nothing was written in between. By default the reply alone.
    nonisolated(nonsending) func reply(client: String, request: String, before catchUp: CatchUpWindow) async throws -> StoredReplyRow?
    /// Keeps `reply` as its client's answer, replacing the client's previous one; then
    /// removes the stored replies `pruning` names: older than its time, and those of its
    /// owner beyond the newest it keeps (counted among those younger than that time). Bound
    /// parameters only; one statement where the database allows (a round trip on PostgreSQL).
    nonisolated(nonsending) func storeReply(_ reply: ReplyToStore, pruning: ReplyPruning) async throws

    /// Releases what the storage holds open (connections, files); later calls fail. Called
    /// once no request is in flight (``RevisionServer/close()``). By default nothing: a
    /// storage without resources of its own, or one whose pool outlives it.
    nonisolated(nonsending) func close() async
}

extension ServerStorage {
    public nonisolated(nonsending) func close() async {}

    public var concurrentWrites: Int { 1 }

    public nonisolated(nonsending) func write<T>(reserving: WriteReservation, _ body: nonisolated(nonsending) () async throws -> T) async throws -> T {
        try await write(body)
    }
}

/// What a write transaction may take (``ServerStorage/write(reserving:_:)``): at most one
/// revision per change set, the ids of its creates, and the clock of the server that runs it.
public struct WriteReservation: Sendable, Equatable {
    /// The most revisions the transaction may give: one per change set.
    public var revisions: Int
    /// The most new ids it may give, by entity position: one per temporary id created.
    public var ids: [Int: Int]
    /// The server's clock before the transaction (its last stamp): a storage that keeps the
    /// clock without a lock moves the stored one to at least this.
    public var clock: UInt64
    /// The clients whose stored replies the transaction looks up (the keys given to
    /// ``ServerStorage/reply(client:request:)``), for a storage that locks them up front.
    public var replyKeys: [String] = []

    public init(revisions: Int, ids: [Int: Int], clock: UInt64) {
        self.revisions = revisions
        self.ids = ids
        self.clock = clock
    }
}

/// The server's revision, the last value of its clock, and its compaction horizon.
public struct ServerState: Sendable, Equatable {
    public var maxRevision: Int64
    public var clock: UInt64
    /// The highest revision at which compaction removed a tombstone or a departure (0: none
    /// removed): a device that has seen less than this, and more than nothing, may have missed
    /// a delete, and must reset (Specs/reliability.md, "Compaction with a horizon"). Only
    /// compaction raises it (``CompactingServerStorage``); ``ServerStorage/saveState(_:)``
    /// leaves it as it is.
    public var horizon: Int64
    /// Where a catch-up must stop, when that is below ``maxRevision``: on a storage whose
    /// writes commit in any order (Specs/http.md §8, "Writes in parallel"), every revision up
    /// to it has committed (or is the transaction's own) and one above it may still be in
    /// flight. Nil: every revision up to ``maxRevision`` may be read.
    public var visible: Int64?
    public init(maxRevision: Int64, clock: UInt64, horizon: Int64 = 0, visible: Int64? = nil) {
        self.maxRevision = maxRevision
        self.clock = clock
        self.horizon = horizon
        self.visible = visible
    }
    /// The last revision a catch-up may read.
    public var readable: Int64 { visible.map { min($0, maxRevision) } ?? maxRevision }
}

/// A deleted record: its id, the revision that deleted it and the deleter's stamp.
public struct Deletion: Sendable, Equatable {
    public var id: Int64
    public var revision: Int64
    public var tombstone: Stamp
    /// The root the record had when it was deleted, in a scoped entity (``ScopedServerStorage``).
    public var root: Int64?
    public init(id: Int64, revision: Int64, tombstone: Stamp, root: Int64? = nil) {
        self.id = id
        self.revision = revision
        self.tombstone = tombstone
        self.root = root
    }
}

/// An entity as the server uses it: its definition, its position in the schema, and the
/// references that point at it.
public struct ServerEntity: Sendable {
    public let entity: Entity
    /// The entity's position in the schema.
    public let position: Int
    /// The fields of other entities (and its own) that reference this one.
    public internal(set) var referencedBy: [(entity: Int, field: Int, action: ReferenceAction)] = []
    /// Whether any of its fields references a record.
    public let hasReferences: Bool
    /// Its fields that reference a record, with the position of the entity they reference
    /// (worked out once: reading a `Field` per record costs a retain and a release).
    public internal(set) var references: [(field: Int, target: Int)] = []

    package init(_ entity: Entity, position: Int) {
        self.entity = entity
        self.position = position
        hasReferences = entity.fields.contains { $0.type.referenceTarget != nil }
    }

    public var name: String { entity.name }
}

/// A record as the server holds it.
public struct ServerRow: Sendable {
    public var record: Record
    /// The revision of the record's last change.
    public var revision: Int64
    /// The revision that created it.
    public var created: Int64
    /// The revision at which each field last changed; nil while all changed at `revision`.
    public var fieldRevisions: ContiguousArray<Int64>?
    /// The id of the root record of the record's scope (Specs/scopes.md), kept by storages
    /// that implement ``ScopedServerStorage``; nil in unscoped entities and for records whose
    /// reference toward the root is null.
    public var root: Int64?

    public init(
        record: Record, revision: Int64, created: Int64, fieldRevisions: ContiguousArray<Int64>? = nil, root: Int64? = nil
    ) {
        self.record = record
        self.revision = revision
        self.created = created
        self.fieldRevisions = fieldRevisions
        self.root = root
    }

    /// The revision at which field `index` last changed.
    func revision(ofField index: Int) -> Int64 { fieldRevisions?[index] ?? revision }

    /// Moves the record to `revision`, with the fields in `changed` changed at it.
    mutating func advance(to newRevision: Int64, changed: FieldMask) {
        var fields = fieldRevisions ?? ContiguousArray(repeating: revision, count: record.values.count)
        for index in changed { fields[index] = newRevision }
        revision = newRevision
        fieldRevisions = fields.allSatisfy { $0 == newRevision } ? nil : fields
    }

    /// Field revisions as unsigned LEB128 distances back from the record's revision: how
    /// storages keep them in one column.
    public static func encode(_ fields: ContiguousArray<Int64>, revision: Int64) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(fields.count * 2)
        for field in fields {
            var rest = UInt64(bitPattern: revision &- field)
            while rest >= 0x80 {
                bytes.append(UInt8(truncatingIfNeeded: rest) | 0x80)
                rest >>= 7
            }
            bytes.append(UInt8(rest))
        }
        return bytes
    }

    /// The field revisions ``encode(_:revision:)`` wrote, or nil when the bytes are damaged.
    public static func decode(_ bytes: UnsafeRawBufferPointer, count: Int, revision: Int64) -> ContiguousArray<Int64>? {
        var fields = ContiguousArray<Int64>()
        fields.reserveCapacity(count)
        var position = 0
        for _ in 0..<count {
            var value: UInt64 = 0, shift: UInt64 = 0
            while true {
                guard position < bytes.count, shift < 64 else { return nil }
                let byte = bytes[position]
                position += 1
                value |= UInt64(byte & 0x7F) << shift
                if byte < 0x80 { break }
                shift += 7
            }
            fields.append(revision &- Int64(bitPattern: value))
        }
        return position == bytes.count ? fields : nil
    }
}

/// The log around a catch-up page after some revision (``ServerStorage/logBounds(after:limit:latest:)``):
/// the revisions of its entries number 0, `limit - 1` and `limit` after it, and the first
/// revision after `latest`; each nil where the log has no such entry. A storage may leave
/// nil what the page does not use: everything when `first` is nil or past `latest`,
/// `last` when `cut` is nil or past `latest`, `afterLatest` when `cut` is within it.
public struct LogBounds: Sendable, Equatable {
    public var first: Int64?
    public var last: Int64?
    public var cut: Int64?
    public var afterLatest: Int64?

    public init(first: Int64?, last: Int64?, cut: Int64?, afterLatest: Int64?) {
        (self.first, self.last, self.cut, self.afterLatest) = (first, last, cut, afterLatest)
    }
}

/// The catch-up page a write request reads after its stored-reply lookup: after the
/// device's revision, at most `limit` log entries, up to the data set's revision `latest`.
public struct CatchUpWindow: Sendable, Equatable {
    public var after: Int64
    public var limit: Int
    public var latest: Int64
    public init(after: Int64, limit: Int, latest: Int64) {
        (self.after, self.limit, self.latest) = (after, limit, latest)
    }
}

extension ServerStorage {
    public nonisolated(nonsending) func reply(client: String, request: String, before catchUp: CatchUpWindow) async throws -> StoredReplyRow? {
        try await reply(client: client, request: request)
    }

    /// Asks only what the page needs, in the order it needs it (an empty window: one
    /// query); what it does not need stays nil.
    public nonisolated(nonsending) func logBounds(after revision: Int64, limit: Int, latest: Int64) async throws -> LogBounds {
        guard let first = try await logRevision(after: revision, offset: 0), first <= latest else {
            return LogBounds(first: nil, last: nil, cut: nil, afterLatest: nil)
        }
        guard let cut = try await logRevision(after: revision, offset: limit), cut <= latest else {
            return LogBounds(first: first, last: nil, cut: nil, afterLatest: try await logRevision(after: latest, offset: 0))
        }
        return LogBounds(first: first, last: try await logRevision(after: revision, offset: limit - 1), cut: cut, afterLatest: nil)
    }

    public var olderSchemas: [OlderSchema] { [] }
    public var migrations: [SchemaChange] { [] }
    public var readsConcurrently: Bool { false }
    public var groupsWrites: Bool { false }
    public var executor: (any ServerExecutor)? { nil }
}
