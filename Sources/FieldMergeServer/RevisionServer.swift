import FieldMerge
import FieldMergeProtocol

/// The server's side of the revision protocol, over a ``ServerStorage``.
///
/// Each change set of a request is one savepoint and, when it commits, one revision.
/// Creates get permanent ids (foreign keys to temporary ids are rewritten, also across the
/// change sets of one request); updates and deletes must name the revision the record has
/// now, else the change set is a conflict: it is rolled back and answered with the server's
/// true state of every record it touched. Every committed change is logged by revision, so
/// catch-up reads the log, not every table.
///
/// An actor on an executor of its own: requests are answered one at a time (those that only
/// read beside the others, on a storage that ``ServerStorage/readsConcurrently``), and a storage
/// whose calls block (SQLite) never runs on Swift concurrency's shared threads.
public actor RevisionServer {
    /// Who may change what: return false to refuse a change (answered as a conflict).
    public typealias Authorization = @Sendable (AuthorizationRequest) -> Bool
    /// Who receives what: false leaves the entity's records out of everything sent to that
    /// identity (catch-up, answers, conflict truths).
    public typealias ReadFilter = @Sendable (_ identity: SyncIdentity?, _ entity: String) -> Bool

    public enum ChangeKind: String, Sendable { case create, update, delete }

    /// One change the authorization hook decides on.
    public struct AuthorizationRequest: Sendable {
        /// Who sent the request, as the transport authenticated it (nil: anonymous).
        public var identity: SyncIdentity?
        public var entity: String
        /// The record's permanent id (for a create, the one it is about to get).
        public var id: Int64
        public var kind: ChangeKind
    }

    /// How the server treats an update or delete that names an older revision.
    public enum Mode: String, Sendable, CaseIterable {
        /// The case study: a stale change is a conflict, answered with the truth.
        case strict
        /// A stale update is merged field by field with what changed since (the entity's
        /// strategies decide truly conflicting fields); a stale delete is still a conflict.
        case merge
    }

    public struct Options: Sendable {
        /// Strict (the case study) or merge.
        public var mode: Mode = .strict
        /// How far ahead of the server's clock an incoming stamp may be; later ones are clamped.
        public var maxDrift: UInt64 = 60_000
        /// The largest catch-up page, in records, when the request names no `limit`.
        public var defaultPageLimit = 100_000
        /// Decides every create, update and delete; nil allows everything.
        public var authorize: Authorization?
        /// Decides which entities each identity receives; nil sends every entity to everyone.
        public var readable: ReadFilter?
        /// Which records of scoped entities each identity's devices hold, and may write
        /// (Specs/scopes.md); nil: no scopes, every device holds every record.
        public var scopes: ScopeRules?
        /// Hears how long the server's phases take (``SyncPhase``: catch-up, apply, log,
        /// reply storage; the log only on SQLite); nil, the default, times nothing.
        public var probe: (any SyncProbe)?
        /// How long a stored reply (the answer a retry after a lost answer gets again) is
        /// kept, in milliseconds of the server's wall clock: 30 days by default. A retry
        /// that comes later is taken as a new request.
        public var replyRetention: UInt64 = 30 * 86_400_000
        /// How many clients' stored replies each authenticated user keeps, the newest by time
        /// stored: 100 by default (at least 1). Replies of requests no transport
        /// authenticated go by age only.
        public var repliesPerUser = 100
        /// The bounds of the live channel (``LiveHub/Options``).
        public var live = LiveHub.Options()
        /// Where the bytes of attachments are kept (Specs/attachments.md): a record that
        /// writes a reference to bytes this store has not finished is refused on its own,
        /// code ``RevisionServer/attachmentMissingCode``. Nil, the default: references are
        /// not checked against any bytes.
        public var attachments: (any AttachmentStore)?
        /// On a storage that ``ServerStorage/groupsWrites`` (PostgreSQL): at most how many
        /// write requests that wait for each other are answered in one transaction, 32 by
        /// default; 1 answers each in a transaction of its own. A group also stops before
        /// its change sets' records pass 10,000 (a larger request runs alone).
        public var writeGroup = 32
        public init() {}
    }

    public nonisolated let schema: Schema
    let options: Options
    let storage: any ServerStorage
    /// The same storage, reachable from outside the actor (tests that inspect it between
    /// requests; FieldMergeServerSQLite's `database`).
    package nonisolated(unsafe) let unsafeStorage: any ServerStorage
    /// Storages may block (SQLite): the server never runs on Swift concurrency's shared pool,
    /// but on a serial queue of its own or the executor its storage names.
    private nonisolated let executor: any ServerExecutor
    /// The schema's entities as the server uses them, by position and by name.
    let entities: [ServerEntity]
    let positions: [String: Int]
    let codec: WireCodec
    /// Writes and reads stored replies: every field, retired ones included.
    let replyCodec: WireCodec
    let replica: ReplicaID
    let wall: any WallClock
    /// The clock of the write being answered (loaded from the storage in its transaction,
    /// since other servers may share the data set): its ``WriteContext``'s when writes run
    /// beside each other, else the server's one.
    var clock: HybridClock {
        get { WriteContext.current?.clock ?? sharedClock }
        set { if let context = WriteContext.current { context.clock = newValue } else { sharedClock = newValue } }
    }
    var sharedClock: HybridClock
    /// Lets one request at a time through (reads beside the others when the storage
    /// ``ServerStorage/readsConcurrently``).
    let turnstile = Turnstile()
    /// The server's revision after the last request it answered (in a ``WriteContext``, after
    /// the last of its group).
    public internal(set) var maxRevision: Int64 {
        get { WriteContext.current?.maxRevision ?? sharedMaxRevision }
        set { if let context = WriteContext.current { context.maxRevision = newValue } else { sharedMaxRevision = newValue } }
    }
    var sharedMaxRevision: Int64
    /// Tells live subscribers what each commit changed (Specs/live.md).
    public nonisolated let live: LiveHub
    /// The scope rules resolved against the schema (``Options/scopes``).
    let scopePlan: ScopePlan?
    /// Whether the storage's roots were checked against the rules since the server started.
    var rootsReady = false
    /// The roots the user of the request being answered holds, by scope.
    var requestGrants: [RootSet] = []
    /// The roots the request's device subscribes to (`SyncRequest/subscriptions`), which
    /// ``requestGrants`` are read again with.
    var requestSubscriptions: ScopeHoldings?
    /// The hashes the request being answered references whose bytes ``Options/attachments``
    /// does not hold, found before its transaction.
    var missingAttachments: Set<String> {
        get { WriteContext.current?.missingAttachments ?? sharedMissingAttachments }
        set { if let context = WriteContext.current { context.missingAttachments = newValue } else { sharedMissingAttachments = newValue } }
    }
    var sharedMissingAttachments: Set<String> = []
    /// Write requests waiting for a group transaction (``Options/writeGroup``), in arrival order.
    var queuedWrites: [QueuedWrite] = []
    /// Whether a task is answering ``queuedWrites``.
    var drainingWrites = false
    /// How many write groups run beside each other now (``ServerStorage/concurrentWrites``).
    var runningGroups = 0
    /// Whether a look for writes that waited long enough to start a group beside the running
    /// ones is due (``RevisionServer/besideAfter``).
    var besideLookDue = false
    /// How many of them carry ``RevisionServer/largeGroupRecords`` records or more.
    var runningLargeGroups = 0
    /// How many group transactions of more than one request committed (tests read it).
    package internal(set) var writeGroupsCommitted = 0
    /// When this server last marked the time of a revision (``CompactingServerStorage/markRevision(_:at:)``).
    var lastMark: UInt64 = 0

    public nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }

    /// Whether the caller runs on the server's own executor: every storage call must
    /// (``ServerStorage`` requirements are `nonisolated(nonsending)`).
    package nonisolated var isOnItsExecutor: Bool { executor.isCurrent }

    /// A server over `storage`, which is prepared for `schema` (created, or checked).
    ///
    /// - Throws: ``ServerError``: ``ServerError/Code/schemaMismatch`` when the storage was
    ///   made for another schema, ``ServerError/Code/storage`` when it fails.
    public init(
        storage: sending some ServerStorage, schema: Schema, options: Options = Options(),
        replica: ReplicaID = ReplicaID(0x5E_5E), wall: any WallClock = SystemWallClock()
    ) async throws(ServerError) {
        let state: ServerState
        do {
            try await storage.open(schema: schema)
            state = try await storage.read { try await storage.state() }
        } catch {
            throw ServerError.wrapping(error)
        }
        try self.init(
            prepared: storage, state: state, schema: schema, options: options, replica: replica, wall: wall,
            migrations: storage.migrations, olderSchemas: storage.olderSchemas)
    }

    /// What opening the storage changed in it to move it to a newer schema
    /// version (Specs/schema.md, "Evolution"); empty otherwise.
    public nonisolated let migrations: [SchemaChange]

    /// The older versions of ``schema`` whose clients this server still answers, each in its
    /// own schema (Specs/schema.md, "Mixed-version fleets"): the versions its storage was
    /// migrated from. Clients of other versions are refused (`incompatibleSchema`).
    public nonisolated let olderSchemas: [OlderSchema]

    /// A server over a storage already opened and prepared for `schema`, whose state is
    /// `state` (storages that open without suspending: FieldMergeServerSQLite).
    ///
    /// - Throws: ``ServerError/Code/badRequest`` when ``Options/scopes`` do not fit the
    ///   schema, ``ServerError/Code/storage`` when the storage cannot serve scopes.
    package init(
        prepared storage: any ServerStorage, state: ServerState, schema: Schema, options: Options, replica: ReplicaID,
        wall: any WallClock, migrations: [SchemaChange] = [], olderSchemas: [OlderSchema] = []
    ) throws(ServerError) {
        scopePlan = try Self.scopePlan(options.scopes, schema: schema, storage: storage)
        self.migrations = migrations
        self.olderSchemas = olderSchemas
        sharedMaxRevision = state.maxRevision
        live = LiveHub(revision: state.maxRevision, options: options.live, scoped: options.scopes != nil)
        self.schema = schema
        self.options = options
        self.storage = storage
        unsafeStorage = storage
        self.replica = replica
        self.wall = wall
        executor = storage.executor ?? SerialQueueExecutor(label: "FieldMerge.RevisionServer")
        codec = WireCodec(schema: schema, older: olderSchemas)
        replyCodec = WireCodec.everyField(of: schema)
        sharedClock = HybridClock(replica: replica, maxDrift: options.maxDrift, wall: wall)
        var entities = schema.entities.enumerated().map { ServerEntity($1, position: $0) }
        var positions: [String: Int] = [:]
        for (position, entity) in schema.entities.enumerated() { positions[entity.name] = position }
        for (position, entity) in schema.entities.enumerated() {
            for (index, field) in entity.fields.enumerated() {
                if case .reference(let target, let action) = field.type, let targetPosition = positions[target] {
                    entities[targetPosition].referencedBy.append((position, index, action))
                    entities[position].references.append((index, targetPosition))
                }
            }
        }
        self.entities = entities
        self.positions = positions
        live.attach(self)
    }

    /// A codec for this server's requests and answers, older versions' included.
    public nonisolated func wireCodec(limits: WireLimits = WireLimits()) -> WireCodec {
        WireCodec(schema: schema, limits: limits, older: olderSchemas)
    }

    func entity(_ name: String) throws(ServerRefusal) -> ServerEntity {
        guard let position = positions[name] else { throw ServerRefusal.unknownEntity(name) }
        return entities[position]
    }
}

/// Who sent a request, as the transport authenticated it (a verified token's claims).
public struct SyncIdentity: Sendable, Hashable {
    /// The user (a token's subject).
    public var user: String
    /// The data set the user belongs to, when the server serves several.
    public var tenant: String?
    /// The user's roles, for permissions.
    public var roles: Set<String>
    /// Custom claims of the token that scope rules name (``ScopeRules/claims``), each as its
    /// values in text: a string claim is one value, an array of strings or integers several.
    public var claims: [String: [String]]

    public init(user: String, tenant: String? = nil, roles: Set<String> = [], claims: [String: [String]] = [:]) {
        self.user = user
        self.tenant = tenant
        self.roles = roles
        self.claims = claims
    }

    /// The values of a claim a scope rule names: `sub`, `tenant`, `roles` or a custom one
    /// (none when the token lacks it).
    public func values(ofClaim name: String) -> [String] {
        switch name {
        case "sub": return [user]
        case "tenant": return tenant.map { [$0] } ?? []
        case "roles": return roles.sorted()
        default: return claims[name] ?? []
        }
    }
}

/// Why a change set cannot commit as sent; turned into a conflict answer or an error.
enum ServerRefusal: Error {
    /// A stale revision, a refused authorization, a restricted delete: answer with the truth.
    /// `refused` names the records the server will not take as they are, with the reason.
    case conflict(touched: [(entity: String, id: Int64)], refused: [RefusedRecord] = [])
    case unknownEntity(String)
    case invalid(String)
}
