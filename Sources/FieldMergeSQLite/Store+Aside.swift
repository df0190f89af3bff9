import FieldMerge

/// A change this device made to a record that then left what the device may hold (the
/// server's scopes, Specs/store.md, "Leaving a scope"): the record was removed from its
/// table, and the change kept here, never sent. ``Store/unsyncedChanges()`` lists it with
/// the code ``code``; ``Store/discard(_:id:)-(String,_)`` drops it.
///
/// If the record comes back later (it enters the device's scopes again), it comes back as
/// the server has it: the change kept here stays until the app discards it, and is never
/// merged on its own. The app may read it and make the edit again.
public struct KeptAside: Sendable, Equatable {
    /// The refusal code ``Store/unsyncedChanges()`` gives these changes.
    public static let code = "outOfScope"
    /// The refusal message ``Store/unsyncedChanges()`` gives these changes.
    public static let message = "the record left what this device may hold; your change is kept aside"

    public var entity: String
    public var id: Int64
    /// What would have been sent: a create (a record the server never had), an update of
    /// ``fields``, a delete, or a re-creation.
    public var kind: PendingChange.Kind
    /// The fields the change sets (every field for a create, none for a delete).
    public var fields: FieldMask
    /// The record as this device had it when it left, with its stamps (for a delete: null
    /// values, its stamps and its tombstone).
    public var record: Record
    /// The last version the server acknowledged; nil for a create.
    public var ancestor: Record?
    /// The revision of ``ancestor``; nil for a create.
    public var revision: Int64?
    /// When it left (milliseconds since the epoch, by this replica's clock).
    public var since: UInt64
}

extension Store {
    /// The changes kept aside because their records left what the device may hold, oldest
    /// first (see ``KeptAside``).
    public func keptAside() throws(StoreError) -> [KeptAside] {
        guard try hasAsideTable() else { return [] }
        let rows = try sqlite { () throws(SQLiteError) in
            try database.rows(
                "SELECT \"entity\", \"id\", \"kind\", \"fields\", \"record\", \"ancestor\", \"since\" FROM \"__fm_aside\" ORDER BY \"seq\"")
        }
        var result: [KeptAside] = []
        for row in rows {
            guard row.count == 7, case .text(let entity) = row[0], case .integer(let id) = row[1], case .text(let kindName) = row[2],
                let kind = PendingChange.Kind(rawValue: kindName), case .integer(let fields) = row[3], case .blob(let record) = row[4],
                case .integer(let since) = row[6]
            else { throw StoreError(.corrupt, "a change kept aside is damaged") }
            let table = try table(entity)
            let local = try decodeAside(record, table.entity, id: id)
            let ancestor: (record: Record, revision: Int64)? = if case .blob(let bytes) = row[5] {
                try decodeAside(bytes, table.entity, id: id)
            } else { nil }
            result.append(KeptAside(
                entity: entity, id: id, kind: kind, fields: FieldMask(bits: UInt64(bitPattern: fields)), record: local.record,
                ancestor: ancestor?.record, revision: ancestor?.revision, since: UInt64(clamping: since)))
        }
        return result
    }

    /// The changes kept aside as ``unsyncedChanges()`` lists them.
    func asideChanges() throws(StoreError) -> [UnsyncedChange] {
        try keptAside().map { kept in
            UnsyncedChange(
                entity: kept.entity, id: kept.id, kind: kept.kind, fields: kept.fields, editedAt: Self.editedAt(kept.record),
                refusal: UnsyncedChange.Refusal(code: KeptAside.code, message: KeptAside.message, since: kept.since))
        }
    }

    /// Copies a change whose record is leaving to `__fm_aside`.
    func keepAside(_ change: PendingChange, ancestor: Record?, entity: Entity, since: Int64) throws(SQLiteError) {
        var record: [UInt8] = []
        RecordCoding.encodeAncestor(change.record, revision: change.revision ?? 0, entity: entity, into: &record)
        var stored: SQLValue = .null
        if let ancestor, let revision = change.revision {
            var bytes: [UInt8] = []
            RecordCoding.encodeAncestor(ancestor, revision: revision, entity: entity, into: &bytes)
            stored = .blob(bytes)
        }
        try database.run(
            "INSERT INTO \"__fm_aside\" (\"entity\", \"id\", \"kind\", \"fields\", \"record\", \"ancestor\", \"since\") VALUES (?, ?, ?, ?, ?, ?, ?)",
            [.text(entity.name), .integer(change.id), .text(change.kind.rawValue), .integer(Int64(bitPattern: change.fields.bits)),
             .blob(record), stored, .integer(since)])
    }

    /// Drops the changes of `entity`#`id` kept aside. - Returns: Whether there were any.
    func dropAside(_ entity: String, id: Int64) throws(SQLiteError) -> Bool {
        try database.run("DELETE FROM \"__fm_aside\" WHERE \"entity\" = ? AND \"id\" = ?", [.text(entity), .integer(id)])
        return database.changes > 0
    }

    /// Whether the file has `__fm_aside` (a store made before it and opened read-only has not).
    private func hasAsideTable() throws(StoreError) -> Bool {
        try sqlite { () throws(SQLiteError) in
            try database.hasTable("__fm_aside")
        }
    }

    private func decodeAside(_ bytes: [UInt8], _ entity: Entity, id: Int64) throws(StoreError) -> (record: Record, revision: Int64) {
        let decoded = bytes.withUnsafeBytes { raw in
            Result { () throws(RecordCodingError) in try RecordCoding.decodeAncestor(raw, entity: entity, id: id) }
        }
        switch decoded {
        case .success(let ancestor): return ancestor
        case .failure(let error): throw StoreError(.corrupt, "a change kept aside is damaged: \(error)", entity: entity.name, id: id)
        }
    }
}
