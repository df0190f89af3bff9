import FieldMerge
import FieldMergeSQLiteDriver

extension Store {
    /// Where `__fm_state` keeps the cache limit (bytes) and the time (milliseconds since 1970)
    /// of the last ``collectAttachmentsIfDue(everyMilliseconds:)`` that collected.
    static let cacheLimitKey = "attachmentCacheLimit"
    static let collectedAtKey = "attachmentsCollectedAt"

    /// Sets ``attachmentCacheLimit`` and keeps it in the store's file, so that it holds
    /// across launches (a store opened later starts with it), then evicts what the new
    /// limit no longer leaves room for (``evictAttachments()``). Nil keeps every file.
    ///
    /// - Throws: ``StoreError/Code/invalidArgument`` for a negative limit (nothing changes);
    ///   ``StoreError/Code/sqlite`` when the limit cannot be written (the limit in effect
    ///   stays as it was).
    public func setAttachmentCacheLimit(_ bytes: Int64?) throws(StoreError) {
        if let bytes, bytes < 0 { throw StoreError(.invalidArgument, "an attachment cache limit is a byte count, not \(bytes)") }
        try sqlite { () throws(SQLiteError) in
            if let bytes {
                try database.run("INSERT OR REPLACE INTO \"__fm_state\" (\"key\", \"value\") VALUES (?, ?)", [.text(Self.cacheLimitKey), .integer(bytes)])
            } else {
                try database.run("DELETE FROM \"__fm_state\" WHERE \"key\" = ?", [.text(Self.cacheLimitKey)])
            }
        }
        attachmentCacheLimit = bytes
        try evictAttachments()
    }

    /// The limit a store's file keeps, or nil.
    static func storedAttachmentCacheLimit(_ database: Database) throws(StoreError) -> Int64? {
        let value = try sqlite { () throws(SQLiteError) in
            try database.scalar("SELECT \"value\" FROM \"__fm_state\" WHERE \"key\" = ?", [.text(cacheLimitKey)])
        }
        switch value {
        case nil, .null?: return nil
        case .integer(let bytes)? where bytes >= 0: return bytes
        default: throw StoreError(.corrupt, "the store's attachment cache limit is damaged")
        }
    }

    /// Runs ``collectAttachments()`` when it has not run for `interval` milliseconds by the
    /// store's wall clock (or never ran, or the clock went back), and notes when it did, in
    /// the store's file: what `SyncClient` calls after each sync, so that a device that
    /// syncs often collects at most once per interval.
    ///
    /// - Returns: How many files were removed; nil when it was not due.
    @discardableResult
    public func collectAttachmentsIfDue(everyMilliseconds interval: Int64) throws(StoreError) -> Int? {
        let now = Int64(clamping: wall.milliseconds())
        let last = try sqlite { () throws(SQLiteError) in
            try database.scalar("SELECT \"value\" FROM \"__fm_state\" WHERE \"key\" = ?", [.text(Self.collectedAtKey)])
        }
        if case .integer(let at)? = last, at <= now, now - at < interval { return nil }
        let removed = try collectAttachments()
        try sqlite { () throws(SQLiteError) in
            try database.run("INSERT OR REPLACE INTO \"__fm_state\" (\"key\", \"value\") VALUES (?, ?)", [.text(Self.collectedAtKey), .integer(now)])
        }
        return removed
    }
}
