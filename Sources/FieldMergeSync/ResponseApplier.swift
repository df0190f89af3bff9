import FieldMerge
import FieldMergeProtocol
import FieldMergeSQLite

/// Turns one response into one store transaction: every record the server sent is merged
/// with what the replica has now, and the server's version becomes its ancestor.
struct ResponseApplier {
    /// A record by its entity's position in the schema and its id: cheap to hash.
    struct Key: Hashable {
        var entity: Int
        var id: Int64
    }

    let store: Store
    /// What the request carried.
    let sent: [Key: PendingChange]
    /// The schema's entity positions by name.
    private let positions: [String: Int]

    struct Outcome {
        var received = 0, merged = 0, conflictingChangeSets = 0
        var conflicts: [FieldConflict] = []
        /// Records answered as conflicts although the revision sent was current: refused by
        /// the server (or caught in a change set another record made conflict).
        var refused: Set<String> = []
        /// Records the server refused as they are, kept aside with the reason.
        var parked: [RefusedRecord] = []
    }

    /// Records refused once already in this sync ("entity#id"): a second refusal adopts the
    /// server's truth.
    var refusedBefore: Set<String> = []
    /// The fault-injection hook of ``SyncClient/setApplyHook(_:)``.
    var hook: (@Sendable (ApplyStage) throws -> Void)?
    /// Hears the time of the merge (``SyncPhase/merge``).
    var probe: (any SyncProbe)?

    /// The latest known state of each record touched so far, so that a record appearing twice
    /// (catch-up, then the answer to what was sent) is merged against the first result.
    private var records: [AcknowledgedRecord] = []
    private var overlay: [Key: Int] = [:]
    private var remaps: [(entity: String, temporary: Int64, permanent: Int64)] = []
    /// The permanent ids of this response, by entity and temporary id, for foreign keys.
    private var permanent: [String: [Int64: Int64]] = [:]
    private var outcome = Outcome()
    private var context = MergeContext()
    /// Records with local changes; every other record takes the server's version.
    private var localChanges: Set<Key>?
    /// How many of ``Outcome/conflicts`` were written already (by earlier pieces).
    private var conflictsWritten = 0

    init(store: Store, pending: [PendingChange]) {
        self.store = store
        var positions: [String: Int] = [:]
        for (index, entity) in store.schema.entities.enumerated() { positions[entity.name] = index }
        self.positions = positions
        var sent: [Key: PendingChange] = [:]
        for change in pending {
            if let entity = positions[change.entity] { sent[Key(entity: entity, id: change.id)] = change }
        }
        self.sent = sent
    }

    private func key(_ entity: String, _ id: Int64) -> Key { Key(entity: positions[entity] ?? -1, id: id) }

    /// Applies `response`; change sets from position `answersFrom` on answer what was sent.
    mutating func apply(_ response: SyncResponse, answersFrom: Int) throws -> Outcome {
        try hook?(.received)
        try probe.measure(.merge) { try merge(response, answersFrom: answersFrom) }
        try hook?(.merged)
        let hook = self.hook
        var changes = ServerChanges(remaps: remaps, records: records, maxRevision: response.maxRevision)
        changes.conflicts = Array(outcome.conflicts[conflictsWritten...])
        conflictsWritten = outcome.conflicts.count
        changes.refused = outcome.parked.map { ($0.entity, $0.id, $0.code, $0.message) }
        for changeSet in response.changeSets.prefix(answersFrom) {
            for entity in changeSet.entities {
                if !entity.create.isEmpty { changes.created[entity.entity, default: []].formUnion(entity.create) }
                // Records that left what the device may hold: removed in the same
                // transaction, their unsynced changes kept aside, nothing sent.
                for id in entity.leave { changes.left.append((entity.entity, id)) }
            }
        }
        changes.scopeState = response.scopes?.storedText
        try store.apply(changes) {
            try hook?(.written)
        }
        return outcome
    }

    /// Merges and writes one piece of a catch-up page, read with
    /// ``WireCodec/decodeResponse(_:piecesOf:_:)``, inside the page's transaction: the
    /// store's revision stays where it is until ``apply(_:answersFrom:)`` takes what the
    /// page says besides its records (the response read without them). A record the page
    /// names twice is merged the second time with what the first piece wrote, as a whole
    /// page merges it with its first version.
    mutating func apply(piece: EntityChanges) throws {
        records.removeAll(keepingCapacity: true)
        overlay.removeAll(keepingCapacity: true)
        let response = SyncResponse(maxRevision: 0, changeSets: [ChangeSet(entities: [piece])])
        try probe.measure(.merge) { try merge(response, answersFrom: 1) }
        var changes = ServerChanges(remaps: remaps, records: records)
        remaps = []
        changes.conflicts = Array(outcome.conflicts[conflictsWritten...])
        conflictsWritten = outcome.conflicts.count
        if !piece.create.isEmpty { changes.created[piece.entity] = Set(piece.create) }
        try store.apply(changes)
        records.removeAll(keepingCapacity: true)
        overlay.removeAll(keepingCapacity: true)
    }

    /// Merges every record of `response` with the replica's, into ``records``.
    private mutating func merge(_ response: SyncResponse, answersFrom: Int) throws {
        var newest = Stamp.none
        for changeSet in response.changeSets {
            for entity in changeSet.entities {
                for record in entity.records { newest = max(newest, record.stamps?.max() ?? .none) }
            }
        }
        store.observe([newest])
        context = MergeContext(resolutionStamp: store.nextStamp())
        if localChanges == nil {
            var marked: Set<Key> = []
            for record in try store.outboxRecords() { marked.insert(key(record.entity, record.id)) }
            localChanges = marked
        }
        let total = response.changeSets.reduce(0) { $0 + $1.entities.reduce(0) { $0 + $1.records.count } }
        overlay.reserveCapacity(total)
        records.reserveCapacity(total)
        for changeSet in response.changeSets where changeSet.conflict != true {
            for changes in changeSet.entities {
                for record in changes.records {
                    if let oldID = record.oldID { permanent[changes.entity, default: [:]][oldID] = record.id }
                }
            }
        }
        for (position, changeSet) in response.changeSets.enumerated() {
            let isAnswer = position >= answersFrom
            if changeSet.conflict == true { outcome.conflictingChangeSets += 1 }
            // A conflict that some record explains (sent on an older revision, deleted since,
            // or not sent at all: a cascade, a missing parent) refuses nobody; the others in
            // it were only caught with it and are sent again. Only an unexplained conflict is
            // a refusal of the records sent on their current revision.
            let unexplained = isAnswer && changeSet.conflict == true && changeSet.refused.isEmpty && !explained(changeSet)
            if isAnswer {
                // What the server refuses as it is waits aside with its reason; everything
                // else of the change set was only caught in the conflict and is sent again
                // (or, in a committed change set, taken: a record refused before the change
                // set was applied, `unstorable`).
                for refusal in changeSet.refused where sent[key(refusal.entity, refusal.id)] != nil {
                    park(refusal)
                }
            }
            for changes in changeSet.entities {
                let entity = try store.schema.requireEntity(changes.entity)
                let deleted = Set(changes.delete)
                for wire in changes.records {
                    outcome.received += 1
                    let remote = Self.record(wire, entity: entity, deleted: deleted.contains(wire.id), stamp: context.resolutionStamp)
                    let confirmation = isAnswer && changeSet.conflict != true
                    let key = self.key(entity.name, wire.id)
                    if unexplained, let revision = wire.revision, sent[key]?.revision == revision {
                        let name = "\(entity.name)#\(wire.id)"
                        if refusedBefore.contains(name) {
                            // Refused twice on a current revision by a server that gives no
                            // reason: it will not take it. Kept aside, never dropped.
                            park(RefusedRecord(
                                entity: entity.name, id: wire.id, code: "refused",
                                message: "the server refused this change twice without saying why"))
                        } else {
                            outcome.refused.insert(name)
                        }
                    }
                    try take(remote, revision: wire.revision ?? 0, oldID: wire.oldID, confirmation: confirmation, entity: entity)
                }
            }
        }
    }

    /// Keeps `refusal` aside, once.
    private mutating func park(_ refusal: RefusedRecord) {
        if !outcome.parked.contains(where: { $0.entity == refusal.entity && $0.id == refusal.id }) { outcome.parked.append(refusal) }
    }

    /// Whether a conflict answer names a record that explains it: one not sent, sent on
    /// another revision, or deleted on the server although sent alive.
    private func explained(_ changeSet: ChangeSet) -> Bool {
        for changes in changeSet.entities {
            let deleted = Set(changes.delete)
            for wire in changes.records {
                guard let change = sent[key(changes.entity, wire.id)], change.revision == wire.revision else { return true }
                if deleted.contains(wire.id) && change.kind != .delete { return true }
            }
        }
        return false
    }

    /// The record the wire describes; a deleted one carries a tombstone: the stamp the server
    /// sent with it, or `stamp` (newer than anything seen) from a peer that sends none.
    static func record(_ wire: WireRecord, entity: Entity, deleted: Bool, stamp: Stamp) -> Record {
        guard deleted else {
            return Record(
                entity: entity.name, id: wire.id, values: wire.values,
                stamps: wire.stamps ?? ContiguousArray(repeating: .none, count: entity.fields.count))
        }
        let sent = wire.stamps?.max() ?? .none
        return Record(
            entity: entity.name, id: wire.id, values: wire.values,
            stamps: ContiguousArray(repeating: .none, count: entity.fields.count), tombstone: sent.isNone ? stamp : sent)
    }

    /// Sets the acknowledged state of the record under `key` (the latest one wins).
    private mutating func put(_ record: AcknowledgedRecord, at key: Key) {
        if let position = overlay[key] {
            records[position] = record
        } else {
            overlay[key] = records.count
            records.append(record)
        }
    }

    private mutating func take(_ remote: Record, revision: Int64, oldID: Int64?, confirmation: Bool, entity: Entity) throws {
        let key = self.key(entity.name, remote.id)
        let localID = oldID ?? remote.id
        let localKey = Key(entity: key.entity, id: localID)
        if let oldID { remaps.append((entity.name, oldID, remote.id)) }
        let sentChange = confirmation ? sent[localKey] : nil
        let known = overlay[key]
        if sentChange == nil, known == nil, localChanges?.contains(localKey) != true {
            // Nothing local to merge: the server's version is the record and its ancestor.
            overlay[key] = records.count
            records.append(AcknowledgedRecord(remote, revision: revision))
            return
        }
        // What this replica has now, and what it last had acknowledged.
        var local: Record?, ancestor: Record?
        if let known {
            local = records[known].record
            ancestor = records[known].ancestor
        } else {
            let stored = try store.recordAndAncestor(entity.name, id: localID)
            local = stored.record.map { rewritten($0.renumbered(remote.id), entity) }
            ancestor = stored.ancestor?.renumbered(remote.id)
        }
        let acknowledged: AcknowledgedRecord
        if let sentChange, let current = local {
            // The server confirmed what was sent: fields unchanged since sending take the
            // server's version (permanent foreign keys, clamped stamps); later edits stay pending.
            var base = rewritten(sentChange.record.renumbered(remote.id), entity)
            if remote.isDeleted { base.tombstone = remote.tombstone }
            let result = try ThreeWayMerge.merge(entity, ancestor: base, local: current, remote: remote, context: context)
            acknowledged = AcknowledgedRecord(record: result.merged, ancestor: remote, revision: revision)
        } else if let current = local, try hasLocalChanges(current, ancestor: ancestor, entity: entity) {
            let result = try ThreeWayMerge.merge(entity, ancestor: ancestor, local: current, remote: remote, context: context)
            outcome.merged += 1
            outcome.conflicts += result.conflicts
            acknowledged = AcknowledgedRecord(record: result.merged, ancestor: remote, revision: revision)
        } else {
            guard !(remote.isDeleted && local == nil) else { return }  // a delete of something never seen
            acknowledged = AcknowledgedRecord(remote, revision: revision)
        }
        put(acknowledged, at: key)
    }

    /// `record` with foreign keys to temporary ids this response made permanent replaced:
    /// the server rewrote them without a new stamp, so a stamp comparison cannot see it.
    private func rewritten(_ record: Record, _ entity: Entity) -> Record {
        guard !permanent.isEmpty else { return record }
        var copy = record
        for (index, field) in entity.fields.enumerated() {
            guard let target = field.type.referenceTarget, case .integer(let id) = record.values[index], id < 0,
                let mapped = permanent[target]?[id]
            else { continue }
            copy.values[index] = .integer(mapped)
        }
        return copy
    }

    private func hasLocalChanges(_ local: Record, ancestor: Record?, entity: Entity) throws -> Bool {
        guard let ancestor else { return true }
        if local.isDeleted != ancestor.isDeleted { return true }
        return local.stamps != ancestor.stamps || local.values != ancestor.values
    }
}

extension Record {
    /// This record under another id.
    func renumbered(_ id: Int64) -> Record {
        var copy = self
        copy.id = id
        return copy
    }
}
