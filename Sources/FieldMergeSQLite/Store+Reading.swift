import FieldMerge

/// A record waiting to be sent, as the protocol needs it: coalesced from every local edit
/// since the last acknowledgement.
public struct PendingChange: Sendable, Equatable {
    public enum Kind: String, Sendable {
        /// The server has never seen the record: send every field.
        case create
        /// Send the pending fields, against the ancestor's revision.
        case update
        /// Send the delete, against the ancestor's revision.
        case delete
        /// The server deleted the record and a merge here brought it back (`editWins`, or
        /// `lastEditWins` with the edit newer): send every field, to re-create it under its id.
        case recreate
    }

    public var entity: String
    public var id: Int64
    public var kind: Kind
    /// The fields to send: all for a create, the pending ones for an update, none for a delete.
    public var fields: FieldMask
    /// The record as it is now (for a delete: its stamps and tombstone).
    public var record: Record
    /// The revision of the acknowledged version the change was made on; nil for a create.
    public var revision: Int64?

    package init(entity: String, id: Int64, kind: Kind, fields: FieldMask, record: Record, revision: Int64?) {
        self.entity = entity
        self.id = id
        self.kind = kind
        self.fields = fields
        self.record = record
        self.revision = revision
    }
}

extension Store {
    /// The record with this id: alive, deleted (a tombstone the server has not confirmed
    /// yet; values are null), or nil when the store has no trace of it.
    package func record(_ entity: String, id: Int64) throws(StoreError) -> Record? {
        let table = try table(entity)
        if let row = try readRow(table, id: id) { return row.record }
        return try readTombstone(table.entity, id: id)?.record
    }

    /// The last version of the record the server acknowledged, and its revision.
    public func ancestor(_ entity: String, id: Int64) throws(StoreError) -> (record: Record, revision: Int64)? {
        let table = try table(entity)
        if let row = try readRow(table, id: id) {
            guard let revision = row.revision, let ancestor = row.ancestor else { return nil }
            return (ancestor, revision)
        }
        guard let tombstone = try readTombstone(table.entity, id: id), let revision = tombstone.revision,
            let ancestor = tombstone.ancestor
        else { return nil }
        return (ancestor, revision)
    }

    /// `record(_:id:)` and the record of ``ancestor(_:id:)`` from one read of the row (or
    /// of the tombstone): what a merge needs of a record.
    package func recordAndAncestor(_ entity: String, id: Int64) throws(StoreError) -> (record: Record?, ancestor: Record?) {
        let table = try table(entity)
        if let row = try readRow(table, id: id) { return (row.record, row.ancestor) }
        guard let tombstone = try readTombstone(table.entity, id: id) else { return (nil, nil) }
        return (tombstone.record, tombstone.revision == nil ? nil : tombstone.ancestor)
    }

    /// The fields of a living record that differ from its ancestor.
    public func pendingFields(_ entity: String, id: Int64) throws(StoreError) -> FieldMask? {
        try readRow(try table(entity), id: id)?.pending
    }

    /// Everything waiting to be sent, in the order it was first edited (so parents created
    /// before their children come first), one change per record however often it was
    /// edited. A record created and deleted before any sync sends nothing. Writes made with
    /// plain SQL are taken in first (``captureExternalWrites()``), so they count at once.
    ///
    /// - Parameters:
    ///   - limit: At most this many changes (the rest stay queued).
    ///   - includingParked: Also the changes the server refused, which wait aside
    ///     (``unsyncedChanges()``) and which a sync does not send.
    public func pendingChanges(limit: Int = .max, includingParked: Bool = false) throws(StoreError) -> [PendingChange] {
        if writable { try captureExternalWrites() }
        var changes: [PendingChange] = []
        // The outbox is read in pieces from the last mark read on: a page of 10,000 out of
        // 100,000 waiting reads about 10,000 marks, not all of them (every round did).
        var after: Int64 = 0
        // Marks of records with nothing to send (created and deleted before any sync, or
        // edited back to their ancestor): read past, then removed, so counts stop naming them.
        var empty: [(entity: String, id: Int64)] = []
        while changes.count < limit {
            let piece = min(limit - changes.count, Self.outboxPiece)
            let marks = try sqlite { () throws(SQLiteError) in
                try database.rows(
                    includingParked
                        ? "SELECT \"seq\", \"entity\", \"id\" FROM \"__fm_outbox\" WHERE \"seq\" > ? ORDER BY \"seq\" LIMIT ?"
                        : "SELECT o.\"seq\", o.\"entity\", o.\"id\" FROM \"__fm_outbox\" o WHERE o.\"seq\" > ? AND NOT EXISTS "
                            + "(SELECT 1 FROM \"__fm_parked\" p WHERE p.\"entity\" = o.\"entity\" AND p.\"id\" = o.\"id\") "
                            + "ORDER BY o.\"seq\" LIMIT ?",
                    [.integer(after), .integer(Int64(piece))])
            }
            for mark in marks where changes.count < limit {
                guard mark.count == 3, case .integer(let seq) = mark[0], case .text(let entity) = mark[1], case .integer(let id) = mark[2]
                else { continue }
                after = seq
                if let change = try pendingChange(entity, id: id) { changes.append(change) } else { empty.append((entity, id)) }
            }
            if marks.count < piece { break }
        }
        if writable && !empty.isEmpty {
            try sqlite { () throws(SQLiteError) in for mark in empty { try clearPending(mark.entity, id: mark.id) } }
        }
        return changes
    }

    /// Marks of the outbox read at a time by ``pendingChanges(limit:includingParked:)``.
    static let outboxPiece = 4_096

    /// What the outbox entry of `entity`#`id` sends; nil when nothing (a record created and
    /// deleted before any sync, or back to its ancestor).
    func pendingChange(_ entity: String, id: Int64) throws(StoreError) -> PendingChange? {
        guard let table = tables[entity] else {
            throw StoreError(.corrupt, "the outbox names entity '\(entity)', which the schema lacks", entity: entity, id: id)
        }
        if let row = try readRow(table, id: id) {
            if row.revision == nil {
                return PendingChange(entity: entity, id: id, kind: .create, fields: table.entity.allFields, record: row.record, revision: nil)
            } else if let ancestor = row.ancestor, ancestor.isDeleted {
                return PendingChange(
                    entity: entity, id: id, kind: .recreate, fields: table.entity.allFields, record: row.record, revision: row.revision)
            } else if !row.pending.isEmpty {
                return PendingChange(entity: entity, id: id, kind: .update, fields: row.pending, record: row.record, revision: row.revision)
            }
        } else if let tombstone = try readTombstone(table.entity, id: id), let revision = tombstone.revision,
            tombstone.ancestor?.isDeleted != true
        {
            return PendingChange(entity: entity, id: id, kind: .delete, fields: FieldMask(), record: tombstone.record, revision: revision)
        }
        return nil
    }

    /// The records that have something waiting in the outbox. A record not in it equals its
    /// ancestor: what the server sends for it can be taken as it is.
    public func outboxRecords() throws(StoreError) -> [(entity: String, id: Int64)] {
        let marks = try sqlite { () throws(SQLiteError) in try database.rows("SELECT \"entity\", \"id\" FROM \"__fm_outbox\"") }
        return marks.compactMap { mark in
            guard case .text(let entity) = mark[0], case .integer(let id) = mark[1] else { return nil }
            return (entity, id)
        }
    }

    /// How many records wait in the outbox (before coalescing away what needs no sending).
    public func outboxCount() throws(StoreError) -> Int {
        let count = try sqlite { () throws(SQLiteError) in try database.scalar("SELECT count(*) FROM \"__fm_outbox\"") }
        if case .integer(let value)? = count { return Int(value) }
        return 0
    }

    /// The permanent id the server gave a temporary id, if it has.
    public func permanentID(_ entity: String, temporary: Int64) throws(StoreError) -> Int64? {
        let value = try sqlite { () throws(SQLiteError) in
            try database.scalar(
                "SELECT \"permanent\" FROM \"__fm_idmap\" WHERE \"entity\" = ? AND \"temporary\" = ?",
                [.text(entity), .integer(temporary)])
        }
        if case .integer(let id)? = value { return id }
        return nil
    }
}
