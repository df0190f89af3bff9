import FieldMerge

/// A change that has not reached the server: what it is, since when, and why it waits.
public struct UnsyncedChange: Sendable, Equatable {
    public var entity: String
    public var id: Int64
    public var kind: PendingChange.Kind
    /// The fields it changes (every field for a create, none for a delete).
    public var fields: FieldMask
    /// When it was last edited here (milliseconds since the epoch, from its newest stamp).
    public var editedAt: UInt64
    /// Why the server refused it, when it did: it is then kept aside and not sent again until
    /// ``Store/retry(_:id:)-(String,_)``. Nil for a change that simply waits for the next sync.
    public var refusal: Refusal?

    /// The server's reason for refusing a change.
    public struct Refusal: Sendable, Equatable {
        /// `unauthorized`, `restricted`, `refused` (no reason given), or the server's own code.
        public var code: String
        public var message: String
        /// When it was refused (milliseconds since the epoch, by this replica's clock).
        public var since: UInt64
    }
}

extension Store {
    /// Every change that has not reached the server: those the next sync sends, those the
    /// server refused, kept aside with its reason, and then those whose records left what
    /// the device may hold (``keptAside()``, code ``KeptAside/code``). Nothing is ever dropped
    /// silently: a refused change stays here until the app retries it (``retry(_:id:)-(String,_)``),
    /// edits and retries it, or gives it up (``discard(_:id:)-(String,_)``). Writes made with plain SQL
    /// count at once (``captureExternalWrites()``).
    public func unsyncedChanges() throws(StoreError) -> [UnsyncedChange] {
        if writable { try captureExternalWrites() }
        let refusals = try parked()
        return try pendingChanges(includingParked: true).map { change in
            UnsyncedChange(
                entity: change.entity, id: change.id, kind: change.kind, fields: change.fields,
                editedAt: Self.editedAt(change.record), refusal: refusals["\(change.entity)#\(change.id)"])
        } + asideChanges()
    }

    /// When `record` was last edited: its newest stamp, tombstone included (milliseconds).
    static func editedAt(_ record: Record) -> UInt64 {
        ((record.stamps + [record.tombstone ?? .none]).max() ?? .none).milliseconds
    }

    /// Keeps a change aside: the server refused it as it is. The next syncs send everything
    /// else; this one waits, with `code` and `message`, until ``retry(_:id:)``.
    package func park(_ entity: String, id: Int64, code: String, message: String) throws(SQLiteError) {
        try database.run(
            "INSERT OR REPLACE INTO \"__fm_parked\" (\"entity\", \"id\", \"code\", \"message\", \"since\") VALUES (?, ?, ?, ?, ?)",
            [.text(entity), .integer(id), .text(code), .text(message), .integer(Int64(clamping: wall.milliseconds()))])
    }

    /// Sends a refused change again with the next sync (after the app changed what made the
    /// server refuse it: the record, a permission, a referencing record).
    ///
    /// - Throws: ``StoreError/Code/recordNotFound`` when no change of that record was refused.
    public func retry(_ entity: String, id: Int64) throws(StoreError) {
        try write {
            guard try parked()["\(entity)#\(id)"] != nil else {
                throw StoreError(.recordNotFound, "no refused change of this record", entity: entity, id: id)
            }
            try unpark(entity, id: id)
        }
    }

    /// Gives up a refused change: the record goes back to what the server acknowledged (a
    /// refused create is removed, with what references it as its delete rules say; a refused
    /// delete brings the record back). Changes of the record kept aside because it left the
    /// device's scopes (``keptAside()``) are dropped too; the record, if it came back, stays
    /// as it is.
    ///
    /// - Throws: ``StoreError/Code/recordNotFound`` when no change of that record was refused
    ///   or kept aside.
    public func discard(_ entity: String, id: Int64) throws(StoreError) {
        let table = try table(entity)
        try write {
            let wasAside = try dropAside(entity, id: id)
            guard try parked()["\(entity)#\(id)"] != nil else {
                if wasAside { return }
                throw StoreError(.recordNotFound, "no refused change of this record", entity: entity, id: id)
            }
            try unpark(entity, id: id)
            if let row = try readRow(table, id: id) {
                if let ancestor = row.ancestor {
                    try writeRow(table, StoredRow(record: ancestor, pending: FieldMask(), revision: row.revision, storedAncestor: nil))
                    try clearPending(entity, id: id)
                    journal { $0.updated[entity, default: []].append(id) }
                } else {
                    // Never on the server: removing it sends nothing.
                    var visited: Set<String> = []
                    try followReferences(to: table, id: id, stamp: clock.now(), visited: &visited)
                    try deleteRow(table, id: id)
                    try clearPending(entity, id: id)
                    journal { $0.deleted[entity, default: []].append(id) }
                }
            } else if let tombstone = try readTombstone(table.entity, id: id), let ancestor = tombstone.ancestor, !ancestor.isDeleted {
                try writeRow(table, StoredRow(record: ancestor, pending: FieldMask(), revision: tombstone.revision, storedAncestor: nil))
                try deleteTombstone(entity, id: id)
                try clearPending(entity, id: id)
                journal { $0.inserted[entity, default: []].append(id) }
            }
            try saveState()
        }
    }

    func unpark(_ entity: String, id: Int64) throws(SQLiteError) {
        try database.run("DELETE FROM \"__fm_parked\" WHERE \"entity\" = ? AND \"id\" = ?", [.text(entity), .integer(id)])
    }

    /// The refused changes' reasons, by "entity#id".
    func parked() throws(StoreError) -> [String: UnsyncedChange.Refusal] {
        let rows = try sqlite { () throws(SQLiteError) in
            try database.rows("SELECT \"entity\", \"id\", \"code\", \"message\", \"since\" FROM \"__fm_parked\"")
        }
        var result: [String: UnsyncedChange.Refusal] = [:]
        for row in rows {
            guard row.count == 5, case .text(let entity) = row[0], case .integer(let id) = row[1], case .text(let code) = row[2],
                case .text(let message) = row[3], case .integer(let since) = row[4]
            else { continue }
            result["\(entity)#\(id)"] = UnsyncedChange.Refusal(code: code, message: message, since: UInt64(clamping: since))
        }
        return result
    }
}
