import FieldMerge
import FieldMergeFiles

extension Store {
    /// Removes cached attachments, least recently accessed first, until the cache holds at
    /// most ``attachmentCacheLimit`` bytes. Only files the server holds go (they can be
    /// downloaded again): a file whose upload is owed is never removed, even past the limit.
    /// Runs after every attach and download, and after a sync's uploads; nothing without a
    /// limit.
    ///
    /// - Returns: How many files were removed.
    @discardableResult
    public func evictAttachments() throws(StoreError) -> Int {
        try evictAttachments(keeping: nil)
    }

    /// ``evictAttachments()``, never removing `kept` (the file just downloaded).
    @discardableResult
    func evictAttachments(keeping kept: String?) throws(StoreError) -> Int {
        guard let limit = attachmentCacheLimit else { return 0 }
        let cache = try attachmentCache()
        let rows = try sqlite { () throws(SQLiteError) in
            try database.rows("SELECT \"sha256\", \"size\", \"owed\" FROM \"__fm_attachments\" ORDER BY \"accessed\"")
        }
        var entries: [(sha256: String, size: Int64, owed: Bool)] = []
        var total: Int64 = 0
        for row in rows {
            guard row.count == 3, case .text(let sha256) = row[0], case .integer(let size) = row[1], case .integer(let owed) = row[2] else {
                throw StoreError(.corrupt, "a row of the attachment cache is damaged")
            }
            guard try cache.size(sha256) != nil else { continue }
            entries.append((sha256, size, owed != 0))
            total += size
        }
        var removed = 0
        for entry in entries where total > limit && !entry.owed && entry.sha256 != kept {
            try forgetAttachment(entry.sha256, cache)
            total -= entry.size
            removed += 1
        }
        return removed
    }

    /// Removes what no upload needs and no alive record references: cached files, their
    /// rows, files the cache holds without a row (left by an attach whose transaction
    /// failed), and copies a crash left in `tmp/`. Files whose upload is owed always stay;
    /// so do downloads not finished.
    ///
    /// - Returns: How many files were removed.
    @discardableResult
    public func collectAttachments() throws(StoreError) -> Int {
        let cache = try attachmentCache()
        var referenced = Set<String>()
        for entity in schema.entities { for reference in try attachmentReferences(of: entity.name) { referenced.insert(reference.sha256) } }
        let rows = try sqlite { () throws(SQLiteError) in try database.rows("SELECT \"sha256\", \"owed\" FROM \"__fm_attachments\"") }
        var known = Set<String>()
        var removed = 0
        for row in rows {
            guard row.count == 2, case .text(let sha256) = row[0], case .integer(let owed) = row[1] else { continue }
            known.insert(sha256)
            guard owed == 0, !referenced.contains(sha256) else { continue }
            if try cache.size(sha256) != nil { removed += 1 }
            try forgetAttachment(sha256, cache)
        }
        for sha256 in cache.cachedDigests() where !known.contains(sha256) && !referenced.contains(sha256) {
            cache.remove(sha256)
            removed += 1
        }
        // Copies a crash interrupted (attaches are synchronous calls of this store, so none
        // is being written now); downloads (`.download`) stay, to be resumed.
        for name in AttachmentFiles.names(in: cache.temporaryDirectory) where name.hasPrefix("part-") {
            AttachmentFiles.remove("\(cache.temporaryDirectory)/\(name)")
        }
        return removed
    }

    /// Removes the cached file of `sha256` and its row (whose upload is not owed).
    private func forgetAttachment(_ sha256: String, _ cache: AttachmentCache) throws(StoreError) {
        try sqlite { () throws(SQLiteError) in
            try database.run("DELETE FROM \"__fm_attachments\" WHERE \"sha256\" = ? AND \"owed\" = 0", [.text(sha256)])
        }
        cache.remove(sha256)
    }
}
