import FieldMerge
import FieldMergeFiles

extension Store {
    /// The store's attachment cache (``AttachmentCache``), made on first use.
    ///
    /// A file store at `P` keeps it beside its file: `P.attachments/`. An in-memory store
    /// has no file to put it beside: it makes a temporary directory of its own
    /// (`$TMPDIR/fieldmerge-attachments-XXXXXX`) and removes it when it closes or goes
    /// away, unless the app chose one with ``useAttachmentDirectory(_:)``.
    public func attachmentCache() throws(StoreError) -> AttachmentCache {
        if let state = attachmentCacheState { return state.cache }
        let cache: AttachmentCache, owned: Bool
        switch database.location {
        case .file(let path):
            (cache, owned) = (try AttachmentCache(directory: path + ".attachments"), false)
        case .memory:
            let directory = try AttachmentCache.files { () throws(AttachmentFileError) in
                try AttachmentFiles.makeTemporaryDirectory(prefix: "fieldmerge-attachments")
            }
            (cache, owned) = (try AttachmentCache(directory: directory), true)
        }
        attachmentCacheState = (cache, owned)
        return cache
    }

    /// Keeps attachments in `directory` (made when missing) instead of the default place
    /// (``attachmentCache()``); the store never removes it. Call it before the first
    /// attachment is written or read; files already in the old place stay there.
    public func useAttachmentDirectory(_ directory: String) throws(StoreError) {
        let cache = try AttachmentCache(directory: directory)
        removeOwnedAttachmentCache()
        attachmentCacheState = (cache, false)
    }

    /// Removes the temporary cache directory an in-memory store made for itself.
    func removeOwnedAttachmentCache() {
        guard let state = attachmentCacheState, state.owned else { return }
        AttachmentFiles.removeTree(state.cache.directory)
        attachmentCacheState = nil
    }

    // MARK: Attaching

    /// Attaches `bytes` to field `field` of record `id` of `entity`: copies them into the
    /// cache (nothing when the same bytes are there already), then, in one transaction,
    /// queues their upload and sets the field to their reference as any local edit does
    /// (a pending change with fresh stamps). The next sync uploads the bytes before it sends
    /// the record.
    ///
    /// - Returns: The reference the field now holds.
    /// - Throws: ``StoreError`` and changes nothing: ``StoreError/Code/unknownEntity``,
    ///   ``StoreError/Code/unknownField``, ``StoreError/Code/invalidArgument`` for a field
    ///   that is not an attachment or a media type that is not `type/subtype` in lowercase,
    ///   ``StoreError/Code/recordNotFound``, ``StoreError/Code/file`` when the cache cannot
    ///   be written. (A file written before a failed transaction stays in the cache, unused,
    ///   until ``collectAttachments()``.)
    @discardableResult
    public func attach(
        _ bytes: [UInt8], mediaType: String, to entity: String, id: Int64, field: String
    ) throws(StoreError) -> AttachmentReference {
        let index = try attachmentField(entity, id: id, field: field, mediaType: mediaType)
        let sha256 = try attachmentCache().put(bytes, hashing: attachmentHashing)
        return try attach(AttachmentReference.checked(sha256, Int64(bytes.count), mediaType), entity, id: id, field: index)
    }

    /// Attaches the file at `path` (read in chunks and hashed as it is copied into the
    /// cache; never held whole) as ``attach(_:mediaType:to:id:field:)`` attaches bytes.
    ///
    /// - Throws: As ``attach(_:mediaType:to:id:field:)``, and ``StoreError/Code/file`` when
    ///   the file cannot be read.
    @discardableResult
    public func attach(
        contentsOf path: String, mediaType: String, to entity: String, id: Int64, field: String
    ) throws(StoreError) -> AttachmentReference {
        let index = try attachmentField(entity, id: id, field: field, mediaType: mediaType)
        let (sha256, size) = try attachmentCache().put(contentsOf: path, hashing: attachmentHashing)
        return try attach(AttachmentReference.checked(sha256, size, mediaType), entity, id: id, field: index)
    }

    /// The position of `field`, once everything an attach checks holds; nothing written.
    private func attachmentField(_ entity: String, id: Int64, field: String, mediaType: String) throws(StoreError) -> Int {
        let table = try writableTable(entity)
        guard let index = table.entity.fieldIndex(field) else {
            throw StoreError(.unknownField, "entity '\(entity)' has no field '\(field)'", entity: entity, id: id)
        }
        let type = table.entity.fields[index].type
        guard type == .attachment else {
            throw StoreError(.invalidArgument, "field '\(field)' is \(type.name), not an attachment", entity: entity, id: id)
        }
        guard !table.entity.fields[index].retired else { throw Self.retired(table.entity, index, id: id) }
        _ = try AttachmentReference.checked(String(repeating: "0", count: 64), 0, mediaType)
        guard try readRow(table, id: id) != nil else { throw StoreError(.recordNotFound, "no such record", entity: entity, id: id) }
        return index
    }

    /// One transaction: the upload queued (unless the server holds the bytes already) and
    /// the field set.
    private func attach(_ reference: AttachmentReference, _ entity: String, id: Int64, field: Int) throws(StoreError) -> AttachmentReference {
        try write {
            try sqlite { () throws(SQLiteError) in
                try database.run(
                    """
                    INSERT INTO "__fm_attachments" ("sha256", "size", "mediaType", "owed", "accessed")
                    VALUES (?, ?, ?, 1, (SELECT coalesce(max("accessed"), 0) + 1 FROM "__fm_attachments"))
                    ON CONFLICT ("sha256") DO UPDATE SET "accessed" = excluded."accessed"
                    """, [.text(reference.sha256), .integer(reference.size), .text(reference.mediaType)])
            }
            try update(entity, id: id, set: [(field, .text(reference.text))])
        }
        try evictAttachments()
        return reference
    }

    // MARK: Reading

    /// The path of the cached bytes of `reference`, or nil when the cache does not hold
    /// them (never downloaded, or evicted). Counts as an access for eviction (on a store
    /// that may write).
    public func attachmentPath(_ reference: AttachmentReference) throws(StoreError) -> String? {
        let cache = try attachmentCache()
        guard try cache.size(reference.sha256) == reference.size else { return nil }
        // A read-only connection (`SyncClient.read`) finds the file without noting the access.
        guard writable else { return cache.path(reference.sha256) }
        try sqlite { () throws(SQLiteError) in
            try database.run(
                """
                UPDATE "__fm_attachments" SET "accessed" = (SELECT coalesce(max("accessed"), 0) + 1 FROM "__fm_attachments")
                WHERE "sha256" = ?
                """, [.text(reference.sha256)])
        }
        return cache.path(reference.sha256)
    }

    /// The cached bytes of `reference`, whole (for an app that wants them as a value), or
    /// nil when the cache does not hold them. Counts as an access for eviction.
    public func attachmentBytes(_ reference: AttachmentReference) throws(StoreError) -> [UInt8]? {
        guard let path = try attachmentPath(reference) else { return nil }
        return try AttachmentCache.files { () throws(AttachmentFileError) in
            let descriptor = try AttachmentFiles.openForReading(path)
            defer { AttachmentFiles.close(descriptor) }
            return try AttachmentFiles.read(descriptor, path: path, at: 0, count: Int(reference.size))
        }
    }

    /// Puts the downloaded file `path` into the cache as the bytes of `reference` (the
    /// caller checked their digest and size) and notes it as held by the server.
    /// - Returns: The cached file's path.
    package func adoptAttachment(_ path: String, as reference: AttachmentReference) throws(StoreError) -> String {
        let cache = try attachmentCache()
        try AttachmentCache.files { () throws(AttachmentFileError) in try cache.place(path, as: reference.sha256) }
        try sqlite { () throws(SQLiteError) in
            try database.run(
                """
                INSERT INTO "__fm_attachments" ("sha256", "size", "mediaType", "owed", "accessed")
                VALUES (?, ?, ?, 0, (SELECT coalesce(max("accessed"), 0) + 1 FROM "__fm_attachments"))
                ON CONFLICT ("sha256") DO UPDATE SET "accessed" = excluded."accessed"
                """, [.text(reference.sha256), .integer(reference.size), .text(reference.mediaType)])
        }
        try evictAttachments(keeping: reference.sha256)
        return cache.path(reference.sha256)
    }

    /// Where a download of `reference` is written until it is checked (resumed when a
    /// former download left bytes there).
    package func attachmentDownloadPath(_ reference: AttachmentReference) throws(StoreError) -> String {
        try attachmentCache().downloadPath(reference.sha256)
    }

    /// The references that alive records of `entity` hold in their attachment fields,
    /// each once, in the order of the records' ids.
    public func attachmentReferences(of entity: String) throws(StoreError) -> [AttachmentReference] {
        let table = try self.table(entity)
        var seen = Set<String>(), references: [AttachmentReference] = []
        for index in table.entity.fields.indices where table.entity.fields[index].type == .attachment {
            let column = Database.quote(table.entity.fields[index].name)
            let rows = try sqlite { () throws(SQLiteError) in
                try database.rows("SELECT \(column) FROM \(table.sql.table) WHERE \(column) IS NOT NULL ORDER BY \"id\"")
            }
            for row in rows {
                guard case .text(let text)? = row.first, let reference = try? AttachmentReference(parsing: text),
                    seen.insert(reference.text).inserted
                else { continue }
                references.append(reference)
            }
        }
        return references
    }
}

extension AttachmentReference {
    /// The reference, or ``StoreError/Code/invalidArgument`` saying what is wrong.
    static func checked(_ sha256: String, _ size: Int64, _ mediaType: String) throws(StoreError) -> AttachmentReference {
        do { return try AttachmentReference(sha256: sha256, size: size, mediaType: mediaType) } catch {
            throw StoreError(.invalidArgument, error.message)
        }
    }
}
