import FieldMerge

extension Store {
    /// Creates a record with a new temporary id (-1, -2, ...) and queues it for upload.
    ///
    /// One transaction writes the row (every field stamped with one fresh stamp), its
    /// metadata, the outbox entry, the id counter and the clock.
    /// - Returns: The temporary id; the server gives the permanent one at the next sync.
    @discardableResult
    package func insert(_ entity: String, values: ContiguousArray<Value>) throws(StoreError) -> Int64 {
        let table = try writableTable(entity)
        return try write {
            let id = nextTemporaryID
            nextTemporaryID -= 1
            try insertRow(table, id: id, values: values)
            return id
        }
    }

    /// Creates a record under a given id: a permanent id the app owns, or the id of a record
    /// deleted earlier, which comes back to life (its deletion is no longer sent).
    package func insert(_ entity: String, id: Int64, values: ContiguousArray<Value>) throws(StoreError) {
        let table = try writableTable(entity)
        try write { try insertRow(table, id: id, values: values) }
    }

    private func insertRow(_ table: EntityTable, id: Int64, values: ContiguousArray<Value>) throws {
        let stamp = clock.now()
        var record = Record(table.entity, id: id, values: values, stamp: stamp)
        try record.validate(against: table.entity)
        try Self.checkAttachments(of: record, in: table.entity, fields: table.entity.allFields)
        for index in table.entity.retiredFields {
            guard values[index] == .null else { throw Self.retired(table.entity, index, id: id) }
            record.stamps[index] = .none  // never sent, never received: nothing to stamp
        }
        try Self.canonicalize(&record)
        if try readRow(table, id: id) != nil {
            throw StoreError(.recordExists, "a record with this id exists", entity: table.entity.name, id: id)
        }
        var row = StoredRow(record: record, pending: table.entity.allFields, revision: nil, storedAncestor: nil)
        if let tombstone = try readTombstone(table.entity, id: id) {
            // Re-created after a delete: the acknowledged version, if any, stays the ancestor.
            row.revision = tombstone.revision
            row.storedAncestor = tombstone.ancestor
            try deleteTombstone(table.entity.name, id: id)
        }
        try checkReferences(of: record, fields: table.entity.allFields, in: table)
        try writeRow(table, row)
        try markPending(table.entity.name, id: id)
        try saveState()
        journal { $0.inserted[table.entity.name, default: []].append(id) }
    }

    /// Every reference among `fields` of `record` names a record that exists: else the
    /// write fails here, naming the field and the missing record, instead of at COMMIT with
    /// SQLite's anonymous foreign-key error.
    private func checkReferences(of record: Record, fields: FieldMask, in table: EntityTable) throws {
        for index in fields {
            guard let target = table.entity.fields[index].type.referenceTarget, case .integer(let id) = record.values[index] else {
                continue
            }
            let targetTable = try self.table(target)
            if id == record.id && target == table.entity.name { continue }
            let exists = try database.statement(targetTable.sql.exists)
            defer { exists.reset() }
            try exists.bind(id, at: 1)
            guard try !exists.step() else { continue }
            let field = table.entity.fields[index].name
            throw StoreError(
                .danglingReference, "field '\(field)' references \(target)#\(id), which does not exist",
                entity: table.entity.name, id: record.id)
        }
    }

    /// Sets the given fields of a record. Only fields whose value really changes are
    /// stamped (all with one fresh stamp) and queued.
    /// - Returns: The fields that changed; empty when nothing did (and nothing was written).
    @discardableResult
    package func update(_ entity: String, id: Int64, set changes: [(field: Int, value: Value)]) throws(StoreError) -> FieldMask {
        let table = try writableTable(entity)
        return try write {
            guard var row = try readRow(table, id: id) else {
                throw StoreError(.recordNotFound, "no such record", entity: entity, id: id)
            }
            var changed = FieldMask()
            var stamp: Stamp?
            let ancestor = row.ancestor
            for (field, value) in changes {
                let value = try Self.canonical(value, entity: entity, id: id)
                guard field >= 0, field < table.fieldCount else {
                    throw StoreError(.unknownField, "field position \(field) is out of range", entity: entity, id: id)
                }
                guard value.fits(table.entity.fields[field].type) else {
                    throw StoreError(.invalidRecord, "field '\(table.entity.fields[field].name)' expects \(table.entity.fields[field].type.name), got \(value.kind.rawValue)", entity: entity, id: id)
                }
                guard row.record.values[field] != value else { continue }
                guard !table.entity.fields[field].retired else { throw Self.retired(table.entity, field, id: id) }
                if stamp == nil { stamp = clock.now() }
                row.record.set(field, value, stamp: stamp!)
                changed.insert(field)
            }
            guard !changed.isEmpty else { return changed }
            try Self.checkAttachments(of: row.record, in: table.entity, fields: changed)
            try checkReferences(of: row.record, fields: changed, in: table)
            if row.revision != nil && row.storedAncestor == nil { row.storedAncestor = ancestor }
            row.pending = Self.pendingFields(row.record, ancestor: row.ancestor, retired: table.entity.retiredFields)
            try writeRow(table, row)
            try markPending(entity, id: id)
            try saveState()
            journal { $0.updated[entity, default: []].append(id) }
            return changed
        }
    }

    /// Sets fields by name.
    @discardableResult
    package func update(_ entity: String, id: Int64, _ changes: [String: Value]) throws(StoreError) -> FieldMask {
        let table = try writableTable(entity)
        var positioned: [(field: Int, value: Value)] = []
        for name in changes.keys.sorted() {
            guard let index = table.entity.fieldIndex(name) else {
                throw StoreError(.unknownField, "entity '\(entity)' has no field '\(name)'", entity: entity, id: id)
            }
            positioned.append((index, changes[name]!))
        }
        return try update(entity, id: id, set: positioned)
    }

    /// Deletes a record, following the schema's references: records that reference it are
    /// deleted too (`cascade`), get null (`setNull`), or make the delete fail (`restrict`).
    /// The deletion is queued for upload; a record the server never saw leaves nothing to send.
    package func delete(_ entity: String, id: Int64) throws(StoreError) {
        let table = try writableTable(entity)
        try write {
            let stamp = clock.now()
            var visited: Set<String> = []
            try deleteCascading(table, id: id, stamp: stamp, visited: &visited)
            try saveState()
        }
    }

    private func deleteCascading(_ table: EntityTable, id: Int64, stamp: Stamp, visited: inout Set<String>) throws {
        guard visited.insert("\(table.entity.name)#\(id)").inserted else { return }
        guard let row = try readRow(table, id: id) else {
            throw StoreError(.recordNotFound, "no such record", entity: table.entity.name, id: id)
        }
        try followReferences(to: table, id: id, stamp: stamp, visited: &visited)
        var record = row.record
        record.tombstone = stamp
        try writeTombstone(table.entity, Tombstone(
            record: record, pending: row.pending, revision: row.revision, ancestor: row.ancestor))
        try deleteRow(table, id: id)
        try markPending(table.entity.name, id: id)
        // A delete replaces a change the server refused: it is sent, and decided anew.
        try unpark(table.entity.name, id: id)
        journal { $0.deleted[table.entity.name, default: []].append(id) }
    }

    /// Applies the schema's `onDelete` to the records that reference record `id` of `table`,
    /// which is being deleted: they are deleted too (`cascade`), get null (`setNull`), or make
    /// the delete fail (`restrict`).
    func followReferences(to table: EntityTable, id: Int64, stamp: Stamp, visited: inout Set<String>) throws {
        for reference in table.referencedBy {
            let child = try self.table(reference.entity)
            let field = child.entity.fields[reference.field]
            let ids = try database.rows(child.sql.referencing(field: reference.field), [.integer(id)]).compactMap { row -> Int64? in
                if case .integer(let id) = row.first { return id } else { return nil }
            }
            for childID in ids where !visited.contains("\(child.entity.name)#\(childID)") {
                switch reference.action {
                case .restrict:
                    throw StoreError(.restricted, "\(child.entity.name)#\(childID) references it through '\(field.name)'",
                                     entity: table.entity.name, id: id)
                case .setNull:
                    try setNullReference(child, id: childID, field: reference.field, stamp: stamp)
                case .cascade:
                    try deleteCascading(child, id: childID, stamp: stamp, visited: &visited)
                }
            }
        }
    }

    private func setNullReference(_ table: EntityTable, id: Int64, field: Int, stamp: Stamp) throws {
        guard var row = try readRow(table, id: id), row.record.values[field] != .null else { return }
        if row.pending.isEmpty, try inDoubt(table.entity.name, id: id) {
            // A record a rebase has not heard of yet: the server's version comes down (its
            // reference cleared by the server's own cascade) or it is gone there. Cleared in
            // step, it is no change of this device's, which could bring it back.
            row.record.set(field, .null, stamp: stamp)
            row.storedAncestor = nil
            try writeRow(table, row)
            journal { $0.updated[table.entity.name, default: []].append(id) }
            return
        }
        let ancestor = row.ancestor
        row.record.set(field, .null, stamp: stamp)
        if row.revision != nil && row.storedAncestor == nil { row.storedAncestor = ancestor }
        row.pending = Self.pendingFields(row.record, ancestor: row.ancestor, retired: table.entity.retiredFields)
        try writeRow(table, row)
        try markPending(table.entity.name, id: id)
        journal { $0.updated[table.entity.name, default: []].append(id) }
    }

    /// SQLite's REAL columns keep neither NaN (it becomes NULL) nor the sign of zero: the
    /// store refuses NaN and writes -0.0 as 0.0, so what it reads back is what it wrote.
    static func canonical(_ value: Value, entity: String, id: Int64) throws(StoreError) -> Value {
        guard case .real(let real) = value else { return value }
        if real.isNaN { throw StoreError(.invalidRecord, "NaN cannot be stored in a REAL column", entity: entity, id: id) }
        return real == 0 ? .real(0) : value
    }

    static func canonicalize(_ record: inout Record) throws(StoreError) {
        for index in record.values.indices {
            // Only -0.0 and NaN change; anything else leaves the storage shared (no copy).
            guard case .real(let real) = record.values[index], real == 0 || real.isNaN else { continue }
            record.values[index] = try canonical(record.values[index], entity: record.entity, id: record.id)
        }
    }

    /// The fields of `record` that differ from the ancestor: by stamp, or by value where a
    /// stamp is missing. Every field without an ancestor. Never a `retired` one: those are
    /// not sent (a plain-SQL write to one stays on the device).
    static func pendingFields(_ record: Record, ancestor: Record?, retired: FieldMask = FieldMask()) -> FieldMask {
        guard let ancestor, !ancestor.isDeleted else { return FieldMask.all(count: record.values.count) }
        var mask = FieldMask()
        for index in 0..<record.values.count where !retired.contains(index) {
            let a = ancestor.stamps[index], r = record.stamps[index]
            let differs = a.isNone || r.isNone ? ancestor.values[index] != record.values[index] : a != r
            if differs { mask.insert(index) }
        }
        return mask
    }

    static func retired(_ entity: Entity, _ field: Int, id: Int64) -> StoreError {
        StoreError(.invalidRecord, "field '\(entity.fields[field].name)' is retired: it is no longer synced and stays empty", entity: entity.name, id: id)
    }
}
