import FieldMerge

extension Store {
    /// Throws away every record and every change that has not reached the server, for a
    /// replica the app no longer trusts: the next sync downloads everything again. The
    /// replica keeps its id and its clock (its stamps stay newer than any it issued), and
    /// temporary ids go on from where they were.
    ///
    /// One transaction: all of it, or nothing.
    public func resetToEmpty() throws(StoreError) {
        try write {
            // Children first, so no foreign key is left pointing at a removed parent.
            for entity in schema.entities.reversed() {
                let table = try table(entity.name)
                try database.execute("DELETE FROM \(table.table)")
            }
            try database.execute("""
                DELETE FROM "__fm_outbox"; DELETE FROM "__fm_tombstones"; DELETE FROM "__fm_idmap"; DELETE FROM "__fm_parked";
                DELETE FROM "__fm_aside"; DROP TABLE IF EXISTS "__fm_rebase"
                """)
            maxRevision = 0
            try saveState()
            try saveScopeState(nil)  // holds nothing: the server sends all it may hold again
            journal { $0.isReset = true }
        }
    }
}
