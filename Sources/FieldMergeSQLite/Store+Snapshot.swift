import FieldMerge

extension Store {
    /// Writes a compact copy of the store to `path` (a WAL checkpoint, then `VACUUM INTO`),
    /// carrying the data, the ancestors and the revision, so a new replica can start from it
    /// instead of downloading everything (the case study ships one in the app bundle).
    ///
    /// - Throws: ``StoreError/Code/unsyncedChanges`` while local changes are unsent: a
    ///   snapshot holds only what the server acknowledged. ``StoreError/Code/sqlite`` when
    ///   the file exists or cannot be written.
    public func exportSnapshot(to path: String) throws(StoreError) {
        guard try pendingChanges(limit: 1).isEmpty else {
            throw StoreError(.unsyncedChanges, "the store has unsent local changes; sync before exporting a snapshot")
        }
        try sqlite { () throws(SQLiteError) in
            if case .file = database.location { try database.execute("PRAGMA wal_checkpoint(TRUNCATE)") }
            try database.run("VACUUM INTO ?", [.text(path)])
        }
    }

    /// Opens a snapshot copied to `path` as a new replica: it keeps the data, the ancestors
    /// and the revision (with the scope holdings that go with it), and gets its own replica
    /// id, a fresh clock, an empty outbox, no changes kept aside and a fresh temporary-id
    /// counter.
    public static func openSnapshot(
        at path: String, schema: Schema, replica: ReplicaID? = nil, wall: any WallClock = SystemWallClock()
    ) throws(StoreError) -> Store {
        let store = try Store(.file(path: path), schema: schema, wall: wall)
        let newReplica = replica ?? randomReplica()
        try sqlite { () throws(SQLiteError) in
            try store.database.execute("""
                DELETE FROM "__fm_outbox"; DELETE FROM "__fm_idmap";
                DELETE FROM "__fm_tombstones" WHERE "revision" IS NULL; DELETE FROM "__fm_aside";
                DELETE FROM "__fm_state" WHERE "key" = 'inFlight'
                """)
            let sql = "UPDATE \"__fm_state\" SET \"value\" = ? WHERE \"key\" = ?"
            try store.database.run(sql, [.integer(Int64(bitPattern: newReplica.rawValue)), .text("replica")])
            try store.database.run(sql, [.integer(-1), .text("nextTemporaryID")])
        }
        return try Store(.file(path: path), schema: schema, wall: wall)
    }
}
