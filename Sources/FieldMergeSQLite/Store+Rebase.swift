import FieldMergeSQLiteDriver

/// Downloading the data set again without giving up unsynced changes: what a replica does
/// when the server compacted deletes it has not seen (`resetRequired`, Specs/store.md,
/// "Rebasing on a fresh download").
///
/// ``beginRebase()`` notes every record the replica holds from the server in `__fm_rebase`
/// and sets the revision to 0; each response applied after it crosses off the records it
/// names, alive or deleted; ``finishRebase()``, once the download is complete, removes the
/// records nobody crossed off and that have no unsynced change (the server no longer has
/// them). Edits stay where they are throughout: the outbox is sent as usual, and each
/// record that comes down is merged three ways with them, against its new ancestor. The
/// table survives a crash, so a download cut short goes on in the next sync.
extension Store {
    static let rebaseTable = """
        CREATE TABLE IF NOT EXISTS "__fm_rebase" ("entity" TEXT NOT NULL, "id" INTEGER NOT NULL,
          PRIMARY KEY ("entity", "id")) WITHOUT ROWID
        """

    /// Whether a rebase is under way: the sync client began one (the server answered
    /// `resetRequired`) and its download has not completed yet.
    public var isRebasing: Bool { (try? database.hasTable("__fm_rebase")) == true }

    /// Starts (or starts again) a rebase, in one transaction: notes the records the replica
    /// holds from the server, forgets the request in flight (the server refused it whole)
    /// and the scopes held, and sets ``maxRevision`` to 0. Unsynced changes stay.
    ///
    /// - Returns: The unsynced changes kept (records in the outbox).
    package func beginRebase() throws(StoreError) -> Int {
        try write(origin: .sync) {
            // Started again: every record is in doubt again (one seen in the first pass may
            // have been deleted, and its tombstone compacted, since).
            try database.execute("DROP TABLE IF EXISTS \"__fm_rebase\"")
            try database.execute(Self.rebaseTable)
            for entity in schema.entities {
                let table = try table(entity.name)
                try database.run(
                    "INSERT INTO \"__fm_rebase\" (\"entity\", \"id\") SELECT ?, \"id\" FROM \(table.table) "
                        + "WHERE \"\(StoreSchema.revisionColumn)\" IS NOT NULL",
                    [.text(entity.name)])
            }
            try database.run("DELETE FROM \"__fm_state\" WHERE \"key\" IN ('inFlight', 'horizon')")
            maxRevision = 0
            try saveState()
            try saveScopeState(nil)
            guard case .integer(let kept)? = try database.scalar("SELECT count(*) FROM \"__fm_outbox\"") else { return 0 }
            return Int(kept)
        }
    }

    /// The server's compaction horizon when the replica's download from revision 0 began
    /// (`SyncRequest.horizon`); nil when the server named none.
    package func downloadHorizon() throws(StoreError) -> Int64? {
        let value = try sqlite { () throws(SQLiteError) in
            try database.scalar("SELECT \"value\" FROM \"__fm_state\" WHERE \"key\" = 'horizon'")
        }
        if case .integer(let horizon)? = value, horizon > 0 { return horizon }
        return nil
    }

    /// Keeps the horizon the answer to a request from revision 0 named (nil: none).
    package func noteDownloadHorizon(_ horizon: Int64?) throws(StoreError) {
        try sqlite { () throws(SQLiteError) in
            try database.run(
                "INSERT OR REPLACE INTO \"__fm_state\" (\"key\", \"value\") VALUES ('horizon', ?)", [.integer(horizon ?? 0)])
        }
    }

    /// Whether a rebase is under way and has not heard of record `id` yet.
    func inDoubt(_ entity: String, id: Int64) throws -> Bool {
        guard isRebasing else { return false }
        return try database.scalar(
            "SELECT count(*) FROM \"__fm_rebase\" WHERE \"entity\" = ? AND \"id\" = ?", [.text(entity), .integer(id)]) == .integer(1)
    }

    private func isParked(_ entity: String, id: Int64) throws -> Bool {
        try database.scalar(
            "SELECT count(*) FROM \"__fm_parked\" WHERE \"entity\" = ? AND \"id\" = ?", [.text(entity), .integer(id)]) == .integer(1)
    }

    /// Crosses off the records a response named (inside ``apply(_:beforeCommit:)``).
    func crossOff(_ records: [AcknowledgedRecord]) throws {
        let statement = try database.statement("DELETE FROM \"__fm_rebase\" WHERE \"entity\" = ? AND \"id\" = ?")
        for acknowledged in records {
            statement.reset()
            try statement.bind([.text(acknowledged.record.entity), .integer(acknowledged.record.id)])
            try statement.execute()
        }
    }

    /// Ends a rebase whose download is complete, in one transaction: every record not
    /// crossed off and without an unsynced change is removed with the local records that
    /// reference it (as a delete from the server: the change feed lists them as deleted),
    /// and so is one whose change the server refused and that is kept aside (it is not sent
    /// again: the change moves to ``keptAside()``, as for a record leaving a scope). A record
    /// not crossed off with a change still to send stays, and goes on syncing as usual.
    ///
    /// - Returns: The records removed, and those kept for their unsynced changes.
    package func finishRebase() throws(StoreError) -> (removed: Int, kept: Int) {
        guard isRebasing else { return (0, 0) }
        return try write(origin: .sync) {
            var gone: [(entity: String, id: Int64)] = [], kept = 0
            for row in try database.rows("SELECT \"entity\", \"id\" FROM \"__fm_rebase\" ORDER BY \"entity\", \"id\"") {
                guard case .text(let entity) = row[0], case .integer(let id) = row[1] else { continue }
                // A change refused and kept aside (`__fm_parked`) is not sent: the server will
                // not hear of the record again, so it goes too, its change kept aside.
                if try pendingChange(entity, id: id) == nil || isParked(entity, id: id) { gone.append((entity, id)) } else { kept += 1 }
            }
            if !gone.isEmpty {
                try removeLeaving(gone)
                // Gone from the server, not out of reach: a delete for the app.
                journal { change in
                    for (entity, ids) in change.left { change.deleted[entity, default: []] += ids }
                    change.left = [:]
                }
            }
            try database.execute("DROP TABLE \"__fm_rebase\"")
            return (gone.count, kept)
        }
    }
}

