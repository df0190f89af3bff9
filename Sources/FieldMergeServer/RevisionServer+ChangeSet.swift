import FieldMerge
import FieldMergeProtocol
import FieldMergeSQLite

extension RevisionServer {
    /// Applies one change set in one transaction at revision `maxRevision + 1`, or answers it
    /// as a conflict with the true state of every record it touched.
    func apply(_ changeSet: ChangeSet, idMap: inout [String: [Int64: Int64]]) throws -> ChangeSet {
        var attempt = ChangeSetAttempt(revision: maxRevision + 1, idMap: idMap)
        let savedClock = clock
        do {
            let answer = try database.transaction(.immediate) { () throws -> ChangeSet in
                try applyInTransaction(changeSet, &attempt)
            }
            maxRevision = attempt.revision
            idMap = attempt.idMap
            return answer
        } catch ServerRefusal.conflict(let touched) {
            clock = savedClock
            return try truth(for: changeSet, touched: touched, idMap: idMap)
        } catch let error as SQLiteError where error.isConstraint {
            // A foreign key to a record that is gone, found at commit: the client learns the truth.
            clock = savedClock
            return try truth(for: changeSet, touched: attempt.touched, idMap: idMap)
        } catch ServerRefusal.unknownEntity(let entity) {
            throw SyncServerError(code: .badRequest, message: "unknown entity '\(entity)'")
        } catch ServerRefusal.invalid(let message) {
            throw SyncServerError(code: .badRequest, message: message)
        }
    }

    struct ChangeSetAttempt {
        var revision: Int64
        var idMap: [String: [Int64: Int64]]
        var answers: [String: EntityChanges] = [:]
        var order: [String] = []
        var touched: [(entity: String, id: Int64)] = []
        /// Records this change set's cascades deleted ("entity#id"): the client's own delete
        /// of one of them, sent along, is no conflict.
        var deletedHere: Set<String> = []
        /// The revisions records had before this change set's setNull cascades changed them:
        /// the client's own update or delete of one of them names that revision.
        var revisionBefore: [String: Int64] = [:]
        /// References written by this change set, checked when it ends (a parent may come later
        /// in the same change set): (target entity, target id, entity, id).
        var references: [(target: String, targetID: Int64, entity: String, id: Int64)] = []

        mutating func answer(_ entity: String, _ change: (inout EntityChanges) -> Void) {
            if answers[entity] == nil {
                answers[entity] = EntityChanges(entity: entity, create: [], update: [], delete: [], records: [])
                order.append(entity)
            }
            change(&answers[entity]!)
        }

        func resolve(_ entity: String, _ id: Int64) -> Int64 { id < 0 ? idMap[entity]?[id] ?? id : id }
    }

    private func applyInTransaction(_ changeSet: ChangeSet, _ attempt: inout ChangeSetAttempt) throws -> ChangeSet {
        for changes in changeSet.entities {
            _ = try table(changes.entity)
            for temporary in changes.create {
                guard temporary < 0 else { throw ServerRefusal.invalid("created ids must be negative temporary ids, got \(temporary)") }
                attempt.idMap[changes.entity, default: [:]][temporary] = try nextID(changes.entity)
            }
        }
        for changes in changeSet.entities {
            let table = try table(changes.entity)
            var records: [Int64: WireRecord] = [:]
            for record in changes.records { records[record.id] = record }
            for temporary in changes.create {
                guard let wire = records[temporary] else { throw ServerRefusal.invalid("no attributes for created \(changes.entity) \(temporary)") }
                try create(wire, in: table, &attempt)
            }
            for id in changes.update {
                guard let wire = records[id] else { throw ServerRefusal.invalid("no attributes for updated \(changes.entity) \(id)") }
                try update(wire, in: table, &attempt)
            }
            for id in changes.delete {
                let sent = records[id]
                try delete(attempt.resolve(changes.entity, id), sentRevision: sent?.revision, stamp: sent?.stamps?.max(),
                           in: table, &attempt)
            }
        }
        try checkReferences(attempt)
        try saveState(revision: attempt.revision)
        return ChangeSet(entities: attempt.order.map { Self.once(attempt.answers[$0]!) }, conflict: false)
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

    private func saveState(revision: Int64) throws {
        let saved = maxRevision
        maxRevision = revision
        defer { maxRevision = saved }
        try saveState()
    }

    /// A value with references to temporary ids replaced by the permanent ids of this request.
    private func rewrite(_ value: Value, field: Field, _ attempt: ChangeSetAttempt) -> Value {
        guard let target = field.type.referenceTarget, case .integer(let id) = value, id < 0 else { return value }
        return .integer(attempt.resolve(target, id))
    }

    /// Notes the references of `record` in `fields` for ``checkReferences(_:)``.
    private func noteReferences(_ record: Record, fields: FieldMask, table: ServerTable, _ attempt: inout ChangeSetAttempt) {
        for index in fields {
            guard let target = table.entity.fields[index].type.referenceTarget, case .integer(let id) = record.values[index]
            else { continue }
            attempt.references.append((target, id, table.entity.name, record.id))
        }
    }

    /// Every reference this change set wrote must name a record that exists when it ends;
    /// else the change set is a conflict whose truth includes the missing record (deleted,
    /// as a rule), so the client learns why. Checked here, not at the request's commit,
    /// where one change set's dangling reference would fail the whole request.
    private func checkReferences(_ attempt: ChangeSetAttempt) throws {
        for reference in attempt.references {
            let target = try table(reference.target)
            let statement = try database.statement("SELECT 1 FROM \(target.table) WHERE \"id\" = ?")
            defer { statement.reset() }
            try statement.bind(reference.targetID, at: 1)
            if try !statement.step() {
                throw ServerRefusal.conflict(
                    touched: attempt.touched + [(reference.entity, reference.id), (reference.target, reference.targetID)])
            }
        }
    }

    /// The stamp to store for an incoming one: clamped to the server's clock plus the skew
    /// bound; a fresh server stamp when the client sent none.
    private func accept(_ stamp: Stamp?) -> Stamp {
        guard let stamp, !stamp.isNone else { return clock.now() }
        clock.observe(stamp)
        return stamp.clamped(toAtMost: clock.acceptanceLimit())
    }

    private func authorize(_ entity: String, _ id: Int64, _ kind: ChangeKind, _ attempt: ChangeSetAttempt) throws {
        if let authorize = options.authorize, !authorize(entity, id, kind) {
            throw ServerRefusal.conflict(touched: attempt.touched + [(entity, id)])
        }
    }

    private func create(_ wire: WireRecord, in table: ServerTable, _ attempt: inout ChangeSetAttempt) throws {
        let id = attempt.resolve(table.entity.name, wire.id)
        try authorize(table.entity.name, id, .create, attempt)
        var values = ContiguousArray<Value>(), stamps = ContiguousArray<Stamp>()
        for (index, field) in table.entity.fields.enumerated() {
            values.append(wire.present.contains(index) ? rewrite(wire.values[index], field: field, attempt) : .null)
            stamps.append(accept(wire.stamps?[index]))
        }
        let row = ServerRow(
            record: Record(entity: table.entity.name, id: id, values: values, stamps: stamps),
            revision: attempt.revision, created: attempt.revision)
        noteReferences(row.record, fields: table.entity.allFields, table: table, &attempt)
        try writeRow(table, row)
        attempt.answer(table.entity.name) {
            $0.create.append(id)
            $0.records.append(wireRecord(row, table: table, oldID: wire.id))
        }
    }

    private func update(_ wire: WireRecord, in table: ServerTable, _ attempt: inout ChangeSetAttempt) throws {
        let id = attempt.resolve(table.entity.name, wire.id)
        attempt.touched.append((table.entity.name, id))
        guard var row = try readRow(table, id: id) else { throw ServerRefusal.conflict(touched: attempt.touched) }
        var incoming = row.record
        for index in wire.present {
            incoming.set(index, rewrite(wire.values[index], field: table.entity.fields[index], attempt),
                         stamp: accept(wire.stamps?[index]))
        }
        var changed = wire.present
        // Current, or current before this change set's own setNull reached the record.
        if wire.revision != row.revision
            && (wire.revision == nil || wire.revision != attempt.revisionBefore["\(table.entity.name)#\(id)"])
        {
            // Stale: merge mode folds it in when the server can decide every field; else conflict.
            guard options.mode == .merge, let base = wire.revision, base < row.revision,
                let merge = mergeStale(incoming, present: wire.present, base: base, into: row, entity: table.entity)
            else { throw ServerRefusal.conflict(touched: attempt.touched) }
            (incoming, changed) = merge
        }
        try authorize(table.entity.name, id, .update, attempt)
        row.record = incoming
        row.advance(to: attempt.revision, changed: changed)
        noteReferences(row.record, fields: changed, table: table, &attempt)
        try writeRow(table, row)
        attempt.answer(table.entity.name) {
            $0.update.append(id)
            $0.records.append(wireRecord(row, table: table))
        }
    }

    /// Deletes a record and follows the schema's references: cascade deletes, setNull
    /// clears, restrict refuses (a conflict).
    ///
    /// The tombstone's stamp is the one the client sent (clamped), or a fresh one for
    /// cascades and peers that send none; it travels with every answer about the delete.
    private func delete(
        _ id: Int64, sentRevision: Int64?, stamp: Stamp? = nil, in table: ServerTable, _ attempt: inout ChangeSetAttempt
    ) throws {
        attempt.touched.append((table.entity.name, id))
        let key = "\(table.entity.name)#\(id)"
        guard let row = try readRow(table, id: id) else {
            // Deleted by a cascade of this change set already: the answer has it.
            if attempt.deletedHere.contains(key) { return }
            throw ServerRefusal.conflict(touched: attempt.touched)
        }
        guard sentRevision == nil || sentRevision == row.revision || sentRevision == attempt.revisionBefore[key] else {
            throw ServerRefusal.conflict(touched: attempt.touched)
        }
        if sentRevision != nil { try authorize(table.entity.name, id, .delete, attempt) }
        attempt.answer(table.entity.name) { _ in }  // the deleted entity is listed before what it cascades to
        for reference in table.referencedBy {
            let child = try self.table(reference.entity)
            let column = Database.quote(child.entity.fields[reference.field].name)
            for match in try database.rows("SELECT \"id\" FROM \(child.table) WHERE \(column) = ? ORDER BY \"id\"", [.integer(id)]) {
                guard case .integer(let childID) = match.first else { continue }
                switch reference.action {
                case .restrict:
                    throw ServerRefusal.conflict(touched: attempt.touched + [(child.entity.name, childID)])
                case .cascade:
                    try delete(childID, sentRevision: nil, in: child, &attempt)
                case .setNull:
                    guard var childRow = try readRow(child, id: childID) else { continue }
                    attempt.touched.append((child.entity.name, childID))
                    let childKey = "\(child.entity.name)#\(childID)"
                    if attempt.revisionBefore[childKey] == nil { attempt.revisionBefore[childKey] = childRow.revision }
                    childRow.record.set(reference.field, .null, stamp: clock.now())
                    childRow.advance(to: attempt.revision, changed: FieldMask([reference.field]))
                    try writeRow(child, childRow)
                    attempt.answer(child.entity.name) {
                        $0.update.append(childID)
                        $0.records.append(wireRecord(childRow, table: child))
                    }
                }
            }
        }
        let revision = attempt.revision
        let tombstone = accept(stamp)
        try deleteRow(table, id: id, tombstone: tombstone, revision: revision)
        attempt.deletedHere.insert(key)
        attempt.answer(table.entity.name) {
            $0.delete.append(id)
            $0.records.append(deletedRecord(id, table: table, revision: revision, tombstone: tombstone))
        }
    }

    /// The answer to a conflicting change set: the server's true state of every record the
    /// change set named or reached, each under update (alive) or delete (deleted).
    private func truth(for changeSet: ChangeSet, touched: [(entity: String, id: Int64)], idMap: [String: [Int64: Int64]]) throws -> ChangeSet {
        var wanted: [(entity: String, id: Int64)] = []
        var seen: Set<String> = []
        func add(_ entity: String, _ id: Int64) {
            let resolved = id < 0 ? idMap[entity]?[id] ?? id : id
            if resolved > 0, seen.insert("\(entity)#\(resolved)").inserted { wanted.append((entity, resolved)) }
        }
        for changes in changeSet.entities {
            for id in changes.update + changes.delete { add(changes.entity, id) }
        }
        for (entity, id) in touched { add(entity, id) }
        var byEntity: [String: EntityChanges] = [:]
        var order: [String] = []
        for (entity, id) in wanted {
            let table = try self.table(entity)
            if byEntity[entity] == nil { byEntity[entity] = EntityChanges(entity: entity, create: [], update: [], delete: [], records: []); order.append(entity) }
            if let row = try readRow(table, id: id) {
                byEntity[entity]!.update.append(id)
                byEntity[entity]!.records.append(wireRecord(row, table: table))
            } else if let deleted = try deletion(entity, id: id) {
                byEntity[entity]!.delete.append(id)
                byEntity[entity]!.records.append(deletedRecord(id, table: table, revision: deleted.revision, tombstone: deleted.tombstone))
            }
        }
        return ChangeSet(entities: order.map { byEntity[$0]! }, conflict: true)
    }
}
