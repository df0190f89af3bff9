import FieldMerge

/// Records leaving what the device may hold, and the holdings kept beside the revision
/// (Specs/store.md, "Leaving a scope").
extension Store {
    /// Removes the records that left what the device may hold, inside the transaction of
    /// ``apply(_:beforeCommit:)``: each one, and every local record that references one
    /// (recursively, whatever the reference's `onDelete`: leaving is not deleting), leaves
    /// its table, its tombstone, the outbox and the refused changes. Nothing is sent for
    /// them. One with a change the server has not taken (``pendingChanges(limit:includingParked:)``
    /// would list it, refused or not) is copied to ``keptAside()`` first. An id the store
    /// does not have is ignored.
    ///
    /// The change feed lists the removed records under ``StoreChange/left``, and no longer
    /// under `inserted` or `updated` for this transaction.
    func removeLeaving(_ left: [(entity: String, id: Int64)]) throws {
        var leaving = Leaving(since: Int64(clamping: wall.milliseconds()))
        leaving.outboxEmpty = try database.scalar("SELECT count(*) FROM \"__fm_outbox\"") == .integer(0)
        // Many leaves (a root lost with all its records) go faster without the triggers.
        if left.count >= Self.bulkApply {
            try withoutCaptureTriggers { for (entity, id) in left { try remove(try table(entity), id: id, &leaving) } }
        } else {
            for (entity, id) in left { try remove(try table(entity), id: id, &leaving) }
        }
        guard !leaving.removed.isEmpty else { return }
        journal { change in
            for (entity, ids) in leaving.removed {
                change.left[entity, default: []] += leaving.order.filter { $0.entity == entity }.map(\.id)
                change.inserted[entity]?.removeAll { ids.contains($0) }
                change.updated[entity]?.removeAll { ids.contains($0) }
                if change.inserted[entity]?.isEmpty == true { change.inserted[entity] = nil }
                if change.updated[entity]?.isEmpty == true { change.updated[entity] = nil }
            }
        }
    }

    /// What one response's leaves have removed so far.
    private struct Leaving {
        /// When the records left (milliseconds, by the replica's wall clock).
        let since: Int64
        var outboxEmpty = false
        var visited: Set<String> = []
        var removed: [String: Set<Int64>] = [:]
        var order: [(entity: String, id: Int64)] = []
    }

    /// Removes record `id`, reached from the leave list (`through` nil) or as a local record
    /// whose field `through.field` references the leaving record `through.parent`. Such a
    /// record whose server version references something else (an edit here moved it under
    /// the leaving record) goes back to that version instead, its change kept aside: the
    /// server did not list it, so it still belongs on this device.
    private func remove(_ table: EntityTable, id: Int64, through: (field: Int, parent: Int64)? = nil, _ leaving: inout Leaving) throws {
        let entity = table.entity.name
        guard leaving.visited.insert("\(entity)#\(id)").inserted else { return }
        if let through, let row = try readRow(table, id: id), let ancestor = row.storedAncestor, row.revision != nil,
            !ancestor.isDeleted, ancestor.values[through.field] != .integer(through.parent),
            let change = try pendingChange(entity, id: id)
        {
            try keepAside(change, ancestor: ancestor, entity: table.entity, since: leaving.since)
            try writeRow(table, StoredRow(record: ancestor, pending: FieldMask(), revision: row.revision, storedAncestor: nil))
            try clearPending(entity, id: id)
            journal { $0.updated[entity, default: []].append(id) }
            // Not done with it: the server may list it too (its version is under a leaving
            // record as well), and then it goes.
            leaving.visited.remove("\(entity)#\(id)")
            return
        }
        for reference in table.referencedBy {
            let child = try self.table(reference.entity)
            let ids = try database.rows(child.sql.referencing(field: reference.field), [.integer(id)])
            for row in ids {
                if case .integer(let childID)? = row.first { try remove(child, id: childID, through: (reference.field, id), &leaving) }
            }
        }
        // Anything with a change to send (or refused) is in the outbox.
        if !leaving.outboxEmpty, try database.scalar(
            "SELECT count(*) FROM \"__fm_outbox\" WHERE \"entity\" = ? AND \"id\" = ?", [.text(entity), .integer(id)]) == .integer(1),
            let change = try pendingChange(entity, id: id)
        {
            let ancestor = try recordAndAncestor(entity, id: id).ancestor
            try keepAside(change, ancestor: ancestor, entity: table.entity, since: leaving.since)
        }
        try deleteRow(table, id: id)
        var existed = database.changes > 0
        try deleteTombstone(entity, id: id)
        existed = existed || database.changes > 0
        try clearPending(entity, id: id)
        guard existed else { return }  // not here: ignored
        leaving.removed[entity, default: []].insert(id)
        leaving.order.append((entity, id))
    }

    /// Writes the holdings of the response being applied (nil: none) beside ``maxRevision``.
    func saveScopeState(_ text: String?) throws(SQLiteError) {
        // ``scopeState`` is what the file holds (read on open, restored with the transaction
        // on a rollback): an unchanged value costs no statement.
        guard text != scopeState else { return }
        scopeState = text
        if let text {
            try database.run("INSERT OR REPLACE INTO \"__fm_state\" (\"key\", \"value\") VALUES ('scopes', ?)", [.text(text)])
        } else {
            try database.run("DELETE FROM \"__fm_state\" WHERE \"key\" = 'scopes'")
        }
    }

    /// The holdings as `__fm_state` keeps them: text, or no row (a store made before scopes,
    /// or synced only with servers without them).
    static func scopeText(_ value: SQLValue?) throws(StoreError) -> String? {
        switch value {
        case nil, .null?: return nil
        case .text(let text)?: return text
        default: throw StoreError(.corrupt, "the store's state holds scopes that are not text")
        }
    }
}
