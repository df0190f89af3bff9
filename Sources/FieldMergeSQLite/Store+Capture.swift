import FieldMerge

extension Store {
    /// Takes in the writes made to the app's tables with plain SQL since the last store
    /// transaction (see `Specs/store.md`, "Plain SQL"): each changed field gets a fresh
    /// stamp and is queued like the store's own edits, with what the row held before as its
    /// ancestor; a deleted row leaves a tombstone; an inserted row is a create. Every store
    /// transaction does this first, and so do ``pendingChanges(limit:includingParked:)`` and
    /// ``unsyncedChanges()`` (on a connection that may write).
    ///
    /// - Throws: ``StoreError/Code/invalidRecord`` when a row written with plain SQL does not
    ///   fit its entity (a value of the wrong type): nothing is taken in until it is fixed.
    public func captureExternalWrites() throws(StoreError) {
        // Nothing captured (the usual case): no write transaction to open and commit.
        guard try sqlite({ () throws(SQLiteError) in try hasCapturedWrites() }) else { return }
        try write {}
    }

    /// Whether a write made with plain SQL waits to be taken in.
    private func hasCapturedWrites() throws(SQLiteError) -> Bool {
        let statement = try database.statement("SELECT 1 FROM \"\(StoreCapture.capturedTable)\" LIMIT 1")
        defer { statement.reset() }
        return try statement.step()
    }

    /// Runs `body`, a bulk write of the store's own, with the capture triggers out of the way
    /// (they skip its writes anyway, at a cost per row), and puts them back before it returns.
    ///
    /// When the database holds no triggers but the capture triggers (the usual case), this
    /// connection's triggers are turned off and on again: no statement, no schema change, and
    /// other connections keep theirs. A database with triggers of the app's own, which must
    /// still fire, has the capture triggers dropped and created again instead, inside the
    /// store's transaction, so no other connection ever sees the file without them (and none
    /// can write meanwhile).
    ///
    /// Inside ``applyingPieces(_:)``, they are taken out of the way once and put back when
    /// the pieces end.
    func withoutCaptureTriggers<T>(_ body: () throws -> T) throws -> T {
        if let off = pieceTriggers, off != .no { return try body() }
        let off: CaptureTriggersOff = try onlyCaptureTriggers() ? .switchedOff : .dropped
        try takeCaptureTriggers(off)
        if pieceTriggers != nil {
            pieceTriggers = off
            return try body()
        }
        let result: T
        do {
            result = try body()
        } catch {
            // A rollback brings dropped triggers back; the connection's switch it does not.
            if off == .switchedOff { try? database.setTriggersEnabled(true) }
            throw error
        }
        try restoreCaptureTriggers(off)
        return result
    }

    /// Whether every trigger of the database (and of this connection's temporary schema) is
    /// a capture trigger of the store's.
    private func onlyCaptureTriggers() throws(SQLiteError) -> Bool {
        let others = try database.scalar(
            "SELECT count(*) FROM (SELECT \"name\" FROM sqlite_master WHERE \"type\" = 'trigger' "
                + "UNION ALL SELECT \"name\" FROM sqlite_temp_master WHERE \"type\" = 'trigger') "
                + "WHERE substr(\"name\", 1, \(StoreCapture.triggerPrefix.utf8.count)) <> '\(StoreCapture.triggerPrefix)'")
        return others == .integer(0)
    }

    private func takeCaptureTriggers(_ off: CaptureTriggersOff) throws {
        switch off {
        case .no: break
        case .switchedOff: try database.setTriggersEnabled(false)
        case .dropped:
            for entity in schema.entities {
                for name in StoreCapture.triggerNames(entity) { try database.execute("DROP TRIGGER IF EXISTS \(name)") }
            }
        }
    }

    private func restoreCaptureTriggers(_ off: CaptureTriggersOff) throws {
        switch off {
        case .no: break
        case .switchedOff: try database.setTriggersEnabled(true)
        case .dropped:
            for entity in schema.entities {
                for statement in StoreCapture.statements(for: entity).dropFirst() { try database.execute(statement) }
            }
        }
    }

    /// Runs `body`, in which ``apply(_:beforeCommit:)`` writes one catch-up page in pieces:
    /// the first piece large enough to take the capture triggers out of the way does, and
    /// they are put back when `body` ends (also when it throws, for a caller that commits
    /// what came before). Pieces of one page then cost what the page whole would.
    package func applyingPieces<T>(_ body: () throws -> T) throws -> T {
        precondition(pieceTriggers == nil, "pieces of one page at a time")
        pieceTriggers = CaptureTriggersOff.no
        let result: T
        do {
            result = try body()
        } catch {
            // A rollback would bring dropped triggers back, but a caller may commit what
            // came before; the connection's switch no rollback undoes.
            if let off = pieceTriggers { try? restoreCaptureTriggers(off) }
            pieceTriggers = nil
            throw error
        }
        let off = pieceTriggers ?? .no
        pieceTriggers = nil
        try restoreCaptureTriggers(off)
        return result
    }

    /// Marks the transaction as the store's own, so the capture triggers skip its writes.
    func markOwnWrites() throws(SQLiteError) {
        try database.run("INSERT OR REPLACE INTO \"\(StoreCapture.writerTable)\" (\"marker\") VALUES (1)")
    }

    func unmarkOwnWrites() throws(SQLiteError) {
        try database.run("DELETE FROM \"\(StoreCapture.writerTable)\"")
    }

    /// Takes in the captured writes; returns how many records it took in.
    @discardableResult
    func absorbCapturedWrites() throws -> Int {
        guard try hasCapturedWrites() else { return 0 }
        // Inserts made elsewhere took temporary ids from the stored counter.
        if case .integer(let next)? = try database.scalar("SELECT \"value\" FROM \"__fm_state\" WHERE \"key\" = 'nextTemporaryID'") {
            nextTemporaryID = min(nextTemporaryID, next)
        }
        let captured = try database.rows(
            "SELECT \"entity\", \"id\", \"inserted\" FROM \"\(StoreCapture.capturedTable)\" ORDER BY \"seq\"")
        let stamp = clock.now()
        var shadows: Set<String> = []
        for entry in captured {
            guard entry.count == 3, case .text(let entity) = entry[0], case .integer(let id) = entry[1],
                case .integer(let inserted) = entry[2], let table = tables[entity]
            else { continue }
            shadows.insert(entity)
            if inserted == 1 {
                try absorbInsert(table, id: id, stamp: stamp)
            } else {
                try absorbChange(table, id: id, stamp: stamp)
            }
        }
        try database.execute("DELETE FROM \"\(StoreCapture.capturedTable)\"")
        for entity in shadows.sorted() {
            if let table = tables[entity] { try database.execute("DELETE FROM \(StoreCapture.shadowName(table.entity))") }
        }
        try saveState()
        return captured.count
    }

    /// A row inserted with plain SQL: a create with every field stamped now.
    private func absorbInsert(_ table: EntityTable, id: Int64, stamp: Stamp) throws {
        guard let values = try readValues(table, id: id, "inserted") else { return }  // inserted, then deleted again
        var record = Record(table.entity, id: id, values: values, stamp: stamp)
        try Self.canonicalize(&record)
        try writeRow(table, StoredRow(record: record, pending: table.entity.allFields, revision: nil, storedAncestor: nil))
        try markPending(table.entity.name, id: id)
        journal { $0.inserted[table.entity.name, default: []].append(id) }
    }

    /// A row updated or deleted with plain SQL: the fields whose values changed get `stamp`;
    /// what the row held before stays its ancestor.
    private func absorbChange(_ table: EntityTable, id: Int64, stamp: Stamp) throws {
        let statement = try database.statement(table.selectShadow)
        defer { statement.reset() }
        try statement.bind(id, at: 1)
        guard try statement.step() else { return }
        let before: StoredRow
        do {
            before = try decodeRow(statement, table, id: id)
        } catch {
            throw StoreError(.corrupt, "the captured state of a row written with plain SQL cannot be read: \(error)",
                             entity: table.entity.name, id: id)
        }
        guard let now = try readValues(table, id: id, "updated") else {
            var record = before.record
            record.tombstone = stamp
            try writeTombstone(table.entity, Tombstone(
                record: record, pending: before.pending, revision: before.revision, ancestor: before.ancestor))
            try markPending(table.entity.name, id: id)
            journal { $0.deleted[table.entity.name, default: []].append(id) }
            return
        }
        var record = before.record
        var changed = FieldMask()
        for index in 0..<now.count where now[index] != record.values[index] {
            record.set(index, now[index], stamp: stamp)
            changed.insert(index)
        }
        guard !changed.isEmpty else {
            // Only the metadata columns were written: put them back.
            try writeRow(table, before)
            return
        }
        try Self.canonicalize(&record)
        let ancestor = before.ancestor
        try writeRow(table, StoredRow(
            record: record, pending: Self.pendingFields(record, ancestor: ancestor, retired: table.entity.retiredFields), revision: before.revision,
            storedAncestor: before.revision == nil ? nil : ancestor))
        try markPending(table.entity.name, id: id)
        journal { $0.updated[table.entity.name, default: []].append(id) }
    }

    /// The field values of a row as they are, or nil when there is no such row.
    private func readValues(_ table: EntityTable, id: Int64, _ how: String) throws -> ContiguousArray<Value>? {
        let columns = table.entity.fields.map { Database.quote($0.name) }.joined(separator: ", ")
        let statement = try database.statement("SELECT \(columns) FROM \(table.table) WHERE \"id\" = ?")
        defer { statement.reset() }
        try statement.bind(id, at: 1)
        guard try statement.step() else { return nil }
        var values = ContiguousArray<Value>()
        for (index, field) in table.entity.fields.enumerated() {
            guard let value = statement.value(Int32(index), as: field.type) else {
                throw StoreError(
                    .invalidRecord, "a row \(how) with plain SQL holds a value that is not \(field.type.name) in '\(field.name)'",
                    entity: table.entity.name, id: id)
            }
            values.append(value)
        }
        return values
    }
}
