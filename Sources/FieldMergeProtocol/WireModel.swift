import FieldMerge

/// One entry of an entity's `"attributes"`: a record's fields as they travel.
///
/// ```json
/// "321": { "__oldId__": -10, "revision": 1001, "screen_id": 749, "comment": "",
///          "__stamps__": { "screen_id": [111411200000000000, 7] } }
/// ```
/// Values are held by schema position, like ``Record``'s: ``values`` is always as wide as
/// the entity and holds ``Value/null`` where the attributes carry no value. ``present``
/// says which fields the attributes carry, so an explicit `null` (present) differs from
/// a field left out (absent), as the case study's partial updates need.
public struct WireRecord: Sendable, Equatable {
    /// The record's id: the attribute key (`"-10"`) as a number.
    public var id: Int64
    /// The fields the attributes carry, by schema position.
    public var present: FieldMask
    /// One value per field, in schema order; ``Value/null`` where absent. Values of fields
    /// outside ``present`` are not written.
    public var values: ContiguousArray<Value>
    /// One stamp per field from `"__stamps__"`, ``Stamp/none`` where it names none; `nil`
    /// when the record carries no `"__stamps__"` key at all (a plain case-study peer).
    public var stamps: ContiguousArray<Stamp>?
    /// `"revision"`: the record's revision (sent with updates and deletes, returned with
    /// every confirmed change).
    public var revision: Int64?
    /// `"__oldId__"`: the temporary id a confirmed create had on the client.
    public var oldID: Int64?

    public init(
        id: Int64, present: FieldMask, values: ContiguousArray<Value>, stamps: ContiguousArray<Stamp>? = nil,
        revision: Int64? = nil, oldID: Int64? = nil
    ) {
        self.id = id
        self.present = present
        self.values = values
        self.stamps = stamps
        self.revision = revision
        self.oldID = oldID
    }

    /// A record of `entity` carrying every field, with its stamps.
    ///
    /// - Parameters:
    ///   - record: The record; its values and stamps must be as wide as `entity`.
    ///   - revision: The record's revision, if it travels with one.
    public init(_ record: Record, revision: Int64? = nil, oldID: Int64? = nil) {
        self.init(
            id: record.id, present: FieldMask.all(count: record.values.count), values: record.values,
            stamps: record.stamps, revision: revision, oldID: oldID)
    }
}

/// The changes of one entity type inside a change set: the object under the type's name.
public struct EntityChanges: Sendable, Equatable {
    /// The entity's name, as listed in the change set's `"types"`.
    public var entity: String
    /// Ids of created records (negative temporary ids in requests, permanent ids in
    /// confirmations).
    public var create: [Int64]
    public var update: [Int64]
    public var delete: [Int64]
    /// `"recreate"` (extension, requests): records the server deleted that a merge brought
    /// back to life (`editWins`, or `lastEditWins` with the edit newer), sent with every
    /// field and the revision of the deletion they answer; the server re-creates them under
    /// their old ids. Absent (empty) in the case study's messages.
    public var recreate: [Int64]
    /// `"leave"` (extension, catch-up): records that left what the device may hold (its
    /// scopes, Specs/scopes.md). Not deletes: the server keeps them and other devices still
    /// hold them; the device removes them without sending anything, keeping its unsynced
    /// edits of them aside. No attributes travel with them.
    public var leave: [Int64]
    /// The `"attributes"` entries, in document order.
    public var records: [WireRecord]

    public init(
        entity: String, create: [Int64] = [], update: [Int64] = [], delete: [Int64] = [], recreate: [Int64] = [],
        leave: [Int64] = [], records: [WireRecord] = []
    ) {
        self.entity = entity
        self.create = create
        self.update = update
        self.delete = delete
        self.recreate = recreate
        self.leave = leave
        self.records = records
    }
}

/// One change set: the changes of one transaction, over one or more entity types.
public struct ChangeSet: Sendable, Equatable {
    /// The entity types, in the order of the change set's `"types"` list.
    public var entities: [EntityChanges]
    /// `"conflict"`: set on the change sets of a response that answer a request's change
    /// sets; `nil` where the key is absent (requests, catch-up change sets).
    public var conflict: Bool?
    /// `"__refused__"` (extension): in a conflict answer, the records the server refuses as
    /// they are, whatever their revision, with the reason. The other records of the change
    /// set were only caught in its conflict.
    public var refused: [RefusedRecord]

    public init(entities: [EntityChanges], conflict: Bool? = nil, refused: [RefusedRecord] = []) {
        self.entities = entities
        self.conflict = conflict
        self.refused = refused
    }
}

/// A record of a change set that the server refuses as it is: sending it again unchanged is
/// refused again. On the wire `{"type": "lists", "id": -1, "code": "unauthorized",
/// "message": "…"}` (the id as the client sent it: temporary for a create).
public struct RefusedRecord: Sendable, Hashable {
    public var entity: String
    public var id: Int64
    /// Why, for code: `unauthorized` (the authorization hook refused it), `restricted` (a
    /// delete that records referencing it prevent), or another server's own code.
    public var code: String
    /// Why, in words.
    public var message: String

    public init(entity: String, id: Int64, code: String, message: String) {
        self.entity = entity
        self.id = id
        self.code = code
        self.message = message
    }
}

/// The body of a `POST /sync` request.
public struct SyncRequest: Sendable, Equatable {
    /// The revision of the data set the client holds.
    public var maxRevision: Int64
    /// The client's pending change sets, in the order they were made.
    public var changeSets: [ChangeSet]
    /// `"clientID"` (extension): identifies the client, so a retried request is recognised.
    public var clientID: String?
    /// `"requestID"` (extension): identifies this request among the client's.
    public var requestID: String?
    /// `"limit"` (extension): the largest catch-up page the client wants, in records
    /// (1...2^31 − 1).
    public var limit: Int?
    /// `"protocolVersion"` (extension): the version of the protocol the client speaks
    /// (``WireProtocol/version``); absent in the case study's requests, which are version 1.
    public var protocolVersion: Int?
    /// `"schemaVersion"` and `"schemaFingerprint"` (extension): the version and the
    /// fingerprint (``Schema/fingerprint``) of the client's schema. A server with another
    /// schema refuses the request (`incompatibleSchema`, HTTP 409) and changes nothing.
    public var schemaVersion: Int?
    public var schemaFingerprint: String?
    /// `"scopes"` (extension): what the device holds of each scope, as the server's last
    /// response said (Specs/scopes.md); nil from a device that never synced with a server
    /// that has scopes.
    public var scopes: ScopeHoldings?
    /// `"subscriptions"` (extension): roots the device asks for beyond what its user's grants
    /// give (Specs/scopes.md §6), by scope; the server gives those a `subscribe` grant allows
    /// and names the others in ``SyncResponse/deniedSubscriptions``. Never `"*"`.
    public var subscriptions: ScopeHoldings?
    /// `"priority"` (extension): roots, by scope, whose records the device wants before any
    /// other root it gains (backfill comes in pages, these first).
    public var priority: ScopeHoldings?
    /// `"horizon"` (extension): the server's compaction horizon when the device began
    /// downloading the data set from revision 0 (``SyncResponse/horizon``), nil or 0 when
    /// none was. A device behind the server's horizon is refused (`resetRequired`) unless its
    /// download began under that same horizon: then it cannot hold a record whose delete
    /// was compacted (Specs/protocol.md, "Compaction").
    public var horizon: Int64?

    public init(
        maxRevision: Int64, changeSets: [ChangeSet], clientID: String? = nil, requestID: String? = nil,
        limit: Int? = nil, protocolVersion: Int? = nil, schemaVersion: Int? = nil, schemaFingerprint: String? = nil,
        scopes: ScopeHoldings? = nil, subscriptions: ScopeHoldings? = nil, priority: ScopeHoldings? = nil, horizon: Int64? = nil
    ) {
        self.horizon = horizon
        self.scopes = scopes
        self.subscriptions = subscriptions
        self.priority = priority
        self.schemaVersion = schemaVersion
        self.schemaFingerprint = schemaFingerprint
        self.maxRevision = maxRevision
        self.changeSets = changeSets
        self.clientID = clientID
        self.requestID = requestID
        self.limit = limit
        self.protocolVersion = protocolVersion
    }
}

/// The body of a `POST /sync` response.
public struct SyncResponse: Sendable, Equatable {
    /// The server's revision after this response (the end of the page when ``hasMore``).
    public var maxRevision: Int64
    /// First the catch-up change sets the client missed, then one answer per change set it
    /// sent, in order.
    public var changeSets: [ChangeSet]
    /// `"hasMore": true` (extension): catch-up was cut at ``maxRevision``; ask again.
    public var hasMore: Bool
    /// `"scopes"` (extension): what the device holds of each scope once it has applied this
    /// response, to send with its next request; nil from a server without scopes.
    public var scopes: ScopeHoldings?
    /// `"deniedSubscriptions"` (extension): the roots of the request's ``SyncRequest/subscriptions``
    /// the user may not hold (no grant gives them, or no such root exists); nil when none.
    public var deniedSubscriptions: ScopeHoldings?
    /// `"horizon"` (extension): the data set's compaction horizon (the highest revision at
    /// which compaction removed a tombstone), sent when there is one; a device that begins
    /// a download from revision 0 keeps it and sends it back (``SyncRequest/horizon``).
    public var horizon: Int64?

    public init(
        maxRevision: Int64, changeSets: [ChangeSet], hasMore: Bool = false, scopes: ScopeHoldings? = nil,
        deniedSubscriptions: ScopeHoldings? = nil, horizon: Int64? = nil
    ) {
        self.horizon = horizon
        self.scopes = scopes
        self.deniedSubscriptions = deniedSubscriptions
        self.maxRevision = maxRevision
        self.changeSets = changeSets
        self.hasMore = hasMore
    }
}

/// The body of an error response: `{"error": "<code>", "message": "..."}`.
public struct WireErrorBody: Sendable, Equatable {
    /// A machine-readable code, e.g. a ``WireError/Code`` raw value.
    public var error: String
    /// A human-readable explanation.
    public var message: String
    /// `"schema"`, with a 409 for another schema: the server's schema outline, one line per
    /// entity and field (``WireError/schema``).
    public var schema: [String]?

    public init(error: String, message: String) {
        self.error = error
        self.message = message
    }

    /// The body answering a request that failed to decode.
    public init(_ error: WireError) {
        self.init(error: error.code.rawValue, message: error.description)
        schema = error.schema
    }
}
