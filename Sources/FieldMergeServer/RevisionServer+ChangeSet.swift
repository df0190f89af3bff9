import FieldMerge
import FieldMergeProtocol

extension RevisionServer {
    /// Applies one change set in a savepoint at revision `revision + 1`, or answers it as a
    /// conflict with the true state of every record it touched. Records holding what no
    /// storage can keep are refused first, on their own (``storable(_:)``); a change set left
    /// with nothing to change takes no revision and is answered `conflict: false`, empty.
    func apply(
        _ sent: ChangeSet, identity: SyncIdentity?, revision: inout Int64, idMap: inout [String: [Int64: Int64]],
        holding: inout [RootSet]?
    ) async throws -> ChangeSet {
        let (changeSet, unstorable) = try storable(sent)
        guard changeSet.changesSomething else { return ChangeSet(entities: [], conflict: false, refused: unstorable) }
        var attempt = ChangeSetAttempt(revision: revision + 1, earlierIDs: idMap, identity: identity)
        let savedClock = clock
        let outcome: ChangeSetOutcome
        do {
            // The savepoint rolls back whatever the change set wrote before its conflict.
            outcome = .committed(try await storage.savepoint { try await applyInSavepoint(changeSet, &attempt) })
        } catch ServerRefusal.conflict(let touched, let refused) {
            // With every record refused before the one that ended the change set.
            outcome = .conflict(touched: touched, refused: attempt.refused + refused)
        }
        switch outcome {
        case .committed(var answer):
            revision = attempt.revision
            if var held = holding {
                // Roots it created are roots it holds: it has every record of them.
                for (scope, id) in attempt.createdRoots { held[scope] = held[scope].adding(id) }
                holding = held
                answer = try await withinScope(answer, holding: held, keep: Self.sentKeys(changeSet, attempt))
            }
            // Added to the request's map in place: the attempt lets go of it first, so that
            // nothing copies it (a copy per change set made a request of many quadratic).
            let added = attempt.newIDs
            attempt = ChangeSetAttempt(revision: attempt.revision, earlierIDs: [:], identity: identity)
            for (entity, ids) in added { idMap[entity, default: [:]].merge(ids) { _, new in new } }
            answer.refused = unstorable + answer.refused
            return answer
        case .conflict(let touched, let refused):
            clock = savedClock
            var answer = try await truth(for: changeSet, touched: touched, idMap: idMap)
            if let holding { answer = try await withinScope(answer, holding: holding) }
            answer.refused = unstorable + refused
            return answer
        }
    }

    struct ChangeSetAttempt {
        var revision: Int64
        /// The permanent ids earlier change sets of the request gave (read only).
        let earlierIDs: [String: [Int64: Int64]]
        /// The permanent ids this change set gives, by entity and temporary id.
        var newIDs: [String: [Int64: Int64]] = [:]
        var identity: SyncIdentity?
        /// The record whose delete the client sent and that is being deleted now (a cascade's
        /// `restrict` refuses it).
        var sentDelete: (entity: String, id: Int64)?
        var answers: [String: EntityChanges] = [:]
        var order: [String] = []
        var touched: [(entity: String, id: Int64)] = []
        /// The records refused as they are so far: the change set goes on past a refusal to
        /// find every other one, then ends as one conflict that names them all.
        var refused: [RefusedRecord] = []
        /// Records this change set's cascades deleted ("entity#id"): the client's own delete
        /// of one of them, sent along, is no conflict.
        var deletedHere: Set<String> = []
        /// The revisions records had before this change set's setNull cascades changed them:
        /// the client's own update or delete of one of them names that revision.
        var revisionBefore: [String: Int64] = [:]
        /// References written by this change set, checked when it ends (a parent may come later
        /// in the same change set): (target entity, target id, entity, id).
        var references: [(target: String, targetID: Int64, entity: String, id: Int64)] = []
        /// Records of scoped entities this change set created or updated, checked when it
        /// ends: each must lie within the user's scope (``checkScopes(_:)``).
        var scopedWrites: [(entity: Int, id: Int64, sentID: Int64, kind: ChangeKind)] = []
        /// Records whose parent toward the root was not written yet when they were.
        var unrooted: [(entity: Int, id: Int64)] = []
        /// Root records this change set created, by scope.
        var createdRoots: [(scope: Int, id: Int64)] = []
        /// What the change set read of its records before it ran (``KnownRecords``).
        var known = KnownRecords()

        mutating func answer(_ entity: String, _ change: (inout EntityChanges) -> Void) {
            if answers[entity] == nil {
                answers[entity] = EntityChanges(entity: entity, create: [], update: [], delete: [], records: [])
                order.append(entity)
            }
            change(&answers[entity]!)
        }

        func resolve(_ entity: String, _ id: Int64) -> Int64 {
            guard id < 0 else { return id }
            return newIDs[entity]?[id] ?? earlierIDs[entity]?[id] ?? id
        }
    }

    private func applyInSavepoint(_ changeSet: ChangeSet, _ attempt: inout ChangeSetAttempt) async throws -> ChangeSet {
        for changes in changeSet.entities where !changes.create.isEmpty {
            let entity = try entity(changes.entity)
            if let temporary = changes.create.first(where: { $0 >= 0 }) {
                throw ServerRefusal.invalid("created ids must be negative temporary ids, got \(temporary)")
            }
            let permanents = try await storage.nextIDs(entity, count: changes.create.count)
            for (temporary, permanent) in zip(changes.create, permanents) {
                attempt.newIDs[changes.entity, default: [:]][temporary] = permanent
            }
        }
        try await prefetch(changeSet, &attempt)
        for changes in changeSet.entities {
            let entity = try entity(changes.entity)
            var records: [Int64: WireRecord] = [:]
            for record in changes.records { records[record.id] = record }
            for temporary in changes.create {
                guard let wire = records[temporary] else { throw ServerRefusal.invalid("no attributes for created \(changes.entity) \(temporary)") }
                try await refusable(&attempt) { try await create(wire, in: entity, &$0) }
            }
            for id in changes.recreate {
                guard let wire = records[id] else { throw ServerRefusal.invalid("no attributes for re-created \(changes.entity) \(id)") }
                try await refusable(&attempt) { try await recreate(wire, in: entity, &$0) }
            }
            for id in changes.update {
                guard let wire = records[id] else { throw ServerRefusal.invalid("no attributes for updated \(changes.entity) \(id)") }
                try await refusable(&attempt) { try await update(wire, in: entity, &$0) }
            }
            for id in changes.delete {
                let sent = records[id]
                try await refusable(&attempt) {
                    try await delete($0.resolve(changes.entity, id), sentRevision: sent?.revision, stamp: sent?.stamps?.max(),
                                     in: entity, &$0)
                }
            }
        }
        // The refusals, all at once (the savepoint rolls back what the others wrote).
        if !attempt.refused.isEmpty { throw ServerRefusal.conflict(touched: attempt.touched) }
        try await checkScopes(&attempt)
        if !attempt.refused.isEmpty { throw ServerRefusal.conflict(touched: attempt.touched) }
        try await checkReferences(attempt)
        return ChangeSet(entities: attempt.order.map { Self.once(attempt.answers[$0]!) }, conflict: false)
    }

    /// Runs the change of one record; when the server refuses it as it is, notes the refusal
    /// and goes on with the next record, so that one answer names every refused record of
    /// the change set (Specs/protocol.md, §3). Any other conflict ends the change set.
    private func refusable(
        _ attempt: inout ChangeSetAttempt, _ body: (inout ChangeSetAttempt) async throws -> Void
    ) async throws {
        do {
            try await body(&attempt)
        } catch ServerRefusal.conflict(let touched, let refused) where !refused.isEmpty {
            attempt.touched = touched
            attempt.refused += refused
        }
    }

    /// The answer with each record once, in its final state: a change set can reach a record
    /// twice (a cascade's setNull, then the client's own update of it). A created record stays
    /// under `create` with its `__oldId__`; a deleted one goes under `delete`.
    static func once(_ changes: EntityChanges) -> EntityChanges {
        var last: [Int64: Int] = [:]
        for (position, record) in changes.records.enumerated() { last[record.id] = position }
        guard last.count < changes.records.count else { return changes }
        let deleted = Set(changes.delete)
        var result = EntityChanges(entity: changes.entity)
        var created: [Int64: Int64] = [:]
        for record in changes.records where record.oldID != nil { created[record.id] = record.oldID }
        for (position, record) in changes.records.enumerated() where last[record.id] == position {
            var final = record
            if deleted.contains(record.id) {
                result.delete.append(record.id)
            } else if let oldID = created[record.id] {
                final.oldID = oldID
                result.create.append(record.id)
            } else {
                result.update.append(record.id)
            }
            result.records.append(final)
        }
        return result
    }

    /// A value with references to temporary ids replaced by the permanent ids of this request.
    private func rewrite(_ value: Value, field: Field, _ attempt: ChangeSetAttempt) -> Value {
        guard let target = field.type.referenceTarget, case .integer(let id) = value, id < 0 else { return value }
        return .integer(attempt.resolve(target, id))
    }

    /// Notes the references of `record` in `fields` for ``checkReferences(_:)``.
    private func noteReferences(_ record: Record, fields: FieldMask, entity: ServerEntity, _ attempt: inout ChangeSetAttempt) {
        for index in fields {
            guard let target = entity.entity.fields[index].type.referenceTarget, case .integer(let id) = record.values[index]
            else { continue }
            attempt.references.append((target, id, entity.name, record.id))
        }
    }

    /// Every reference this change set wrote must name a record that exists when it ends;
    /// else the change set is a conflict whose truth includes the missing record (deleted,
    /// as a rule), so the client learns why.
    private func checkReferences(_ attempt: ChangeSetAttempt) async throws {
        if let reference = try await firstMissing(attempt.references) {
            throw ServerRefusal.conflict(
                touched: attempt.touched + [(reference.entity, reference.id), (reference.target, reference.targetID)])
        }
    }

    /// The stamp to store for an incoming one: clamped to the server's clock plus the skew
    /// bound; a fresh server stamp when the client sent none.
    func accept(_ stamp: Stamp?) -> Stamp {
        guard let stamp, !stamp.isNone else { return clock.now() }
        clock.observe(stamp)
        return stamp.clamped(toAtMost: clock.acceptanceLimit())
    }

    /// Asks ``Options/authorize``; a refusal refuses the record as the client sent it
    /// (`sentID`: its temporary id for a create).
    func authorize(_ entity: String, _ id: Int64, sentID: Int64, _ kind: ChangeKind, _ attempt: ChangeSetAttempt) throws {
        guard let authorize = options.authorize else { return }
        if !authorize(AuthorizationRequest(identity: attempt.identity, entity: entity, id: id, kind: kind)) {
            let who = attempt.identity.map { " for \($0.user)" } ?? ""
            throw ServerRefusal.conflict(
                touched: attempt.touched + [(entity, id)],
                refused: [RefusedRecord(entity: entity, id: sentID, code: "unauthorized", message: "the server does not allow this \(kind.rawValue)\(who)")])
        }
    }

    private func create(_ wire: WireRecord, in entity: ServerEntity, _ attempt: inout ChangeSetAttempt) async throws {
        let id = attempt.resolve(entity.name, wire.id)
        try authorize(entity.name, id, sentID: wire.id, .create, attempt)
        let row = try await writeNew(wire, id: id, in: entity, &attempt)
        attempt.answer(entity.name) {
            $0.create.append(id)
            $0.records.append(wireRecord(row, entity: entity, oldID: wire.id))
        }
    }

    /// Writes the record `wire` describes under `id`, created at this change set's revision
    /// (absent fields null, stamps accepted), and notes its references.
    private func writeNew(_ wire: WireRecord, id: Int64, in entity: ServerEntity, _ attempt: inout ChangeSetAttempt) async throws -> ServerRow {
        var values = ContiguousArray<Value>(), stamps = ContiguousArray<Stamp>()
        for (index, field) in entity.entity.fields.enumerated() {
            values.append(wire.present.contains(index) ? rewrite(wire.values[index], field: field, attempt) : .null)
            stamps.append(accept(wire.stamps?[index]))
        }
        var row = ServerRow(
            record: Record(entity: entity.name, id: id, values: values, stamps: stamps),
            revision: attempt.revision, created: attempt.revision)
        noteReferences(row.record, fields: entity.entity.allFields, entity: entity, &attempt)
        if let place = scopePlan?.places[entity.position], let scope = place.scope {
            let (root, resolved) = try await root(of: entity, id: id, values: values)
            row.root = root
            if !resolved { attempt.unrooted.append((entity.position, id)) }
            attempt.scopedWrites.append((entity.position, id, wire.id, .create))
            if case .root = place { attempt.createdRoots.append((scope, id)) }
        }
        try await write(row, of: entity, &attempt)
        return row
    }

    /// Brings a deleted record back under its old id: the client's merge kept its edit over
    /// the delete (`editWins`, or `lastEditWins` with the edit newer). The revision sent must
    /// be the deletion's (else the change set is stale: a conflict with the truth); a record
    /// alive again already is a conflict too, and one never deleted is refused. A record whose
    /// tombstone compaction removed may be re-created naming any revision up to the horizon.
    private func recreate(_ wire: WireRecord, in entity: ServerEntity, _ attempt: inout ChangeSetAttempt) async throws {
        let id = wire.id
        attempt.touched.append((entity.name, id))
        if try await row(entity, id: id, attempt) != nil { throw ServerRefusal.conflict(touched: attempt.touched) }
        if let deletion = try await deletion(entity, id: id, attempt) {
            guard wire.revision == deletion.revision else { throw ServerRefusal.conflict(touched: attempt.touched) }
        } else if let compacted = try await compactedDeletion(entity, id: id) {
            // Its tombstone was compacted: deleted at some revision up to the horizon, and
            // nothing happened to it since, so any of those revisions is the current one.
            guard let sent = wire.revision, sent > 0, sent <= compacted.revision else {
                throw ServerRefusal.conflict(touched: attempt.touched)
            }
        } else {
            throw ServerRefusal.conflict(
                touched: attempt.touched,
                refused: [RefusedRecord(entity: entity.name, id: id, code: "notDeleted", message: "there is no deleted record to re-create under this id")])
        }
        try authorize(entity.name, id, sentID: id, .create, attempt)
        attempt.known.wrote(entity.position, id)
        try await storage.forgetDeletion(entity, id: id)
        let row = try await writeNew(wire, id: id, in: entity, &attempt)
        attempt.answer(entity.name) {
            $0.update.append(id)
            $0.records.append(wireRecord(row, entity: entity))
        }
    }

    private func update(_ wire: WireRecord, in entity: ServerEntity, _ attempt: inout ChangeSetAttempt) async throws {
        let id = attempt.resolve(entity.name, wire.id)
        attempt.touched.append((entity.name, id))
        guard var row = try await row(entity, id: id, attempt) else { throw ServerRefusal.conflict(touched: attempt.touched) }
        // Outside the scope is refused whatever revision it names (a device that held it once).
        let scope = scopePlan?.places[entity.position].scope
        if let scope, try await !holds(row.root, scope: scope, identity: attempt.identity) {
            throw outOfScope(entity.name, id, sentID: wire.id, .update, attempt)
        }
        var incoming = row.record
        for index in wire.present {
            incoming.set(index, rewrite(wire.values[index], field: entity.entity.fields[index], attempt),
                         stamp: accept(wire.stamps?[index]))
        }
        var changed = wire.present
        // Current, or current before this change set's own setNull reached the record.
        if wire.revision != row.revision
            && (wire.revision == nil || wire.revision != attempt.revisionBefore["\(entity.name)#\(id)"])
        {
            // Stale: merge mode folds it in when the server can decide every field; else conflict.
            guard options.mode == .merge, let base = wire.revision, base < row.revision,
                let merge = mergeStale(incoming, present: wire.present, base: base, into: row, entity: entity.entity)
            else { throw ServerRefusal.conflict(touched: attempt.touched) }
            (incoming, changed) = merge
        }
        try authorize(entity.name, id, sentID: wire.id, .update, attempt)
        let oldRoot = row.root
        if scope != nil {
            let (root, resolved) = try await root(of: entity, id: id, values: incoming.values)
            row.root = root
            if !resolved { attempt.unrooted.append((entity.position, id)) }
            attempt.scopedWrites.append((entity.position, id, wire.id, .update))
        }
        row.record = incoming
        row.advance(to: attempt.revision, changed: changed)
        noteReferences(row.record, fields: changed, entity: entity, &attempt)
        try await write(row, of: entity, &attempt)
        if row.root != oldRoot { try await moved(entity, id: id, from: oldRoot, to: row.root, &attempt) }
        attempt.answer(entity.name) {
            $0.update.append(id)
            $0.records.append(wireRecord(row, entity: entity))
        }
    }
}

/// How a change set ended: committed with its answer, or a conflict over these records.
enum ChangeSetOutcome {
    case committed(ChangeSet)
    case conflict(touched: [(entity: String, id: Int64)], refused: [RefusedRecord])
}

