import FieldMerge

/// An attachment whose bytes the server does not hold yet, as far as this device knows:
/// the sync client uploads it before it sends the records (Specs/attachments.md, "The
/// device"). The queue is a table of the store: it survives restarts.
public struct QueuedAttachment: Sendable, Equatable {
    public var reference: AttachmentReference
    /// How many times the server refused the upload (too large, the bytes do not have their
    /// hash). A network failure does not count: it fails the sync, which is retried.
    public var attempts: Int
    /// Not tried before this time (milliseconds since the epoch); `Int64.max` once given up
    /// after ``Store/maxAttachmentAttempts`` refusals, until ``Store/retryAttachmentUploads()``.
    public var nextAttempt: Int64
    /// The server's last refusal, if any.
    public var failure: String?

    /// Whether the client stopped trying (``Store/maxAttachmentAttempts`` refusals).
    public var isGivenUp: Bool { nextAttempt == Int64.max }
}

extension Store {
    /// After this many refusals an upload is not tried again until the app asks
    /// (``retryAttachmentUploads()``).
    public static let maxAttachmentAttempts = 8

    /// The wait after the first refusal of an upload (one minute), doubled at each further
    /// refusal, at most a day.
    static let attachmentBackoff: Int64 = 60_000

    /// Every attachment whose upload is owed, in the order they were attached.
    public func queuedAttachments() throws(StoreError) -> [QueuedAttachment] {
        try owedAttachments("")
    }

    /// The owed uploads due at `now` (milliseconds since the epoch).
    package func dueAttachments(at now: Int64) throws(StoreError) -> [QueuedAttachment] {
        try owedAttachments(" AND \"nextAttempt\" <= ?", [.integer(now)])
    }

    private func owedAttachments(_ condition: String, _ bindings: [SQLValue] = []) throws(StoreError) -> [QueuedAttachment] {
        let rows = try sqlite { () throws(SQLiteError) in
            try database.rows(
                """
                SELECT "sha256", "size", "mediaType", "attempts", "nextAttempt", "failure" FROM "__fm_attachments"
                WHERE "owed" = 1\(condition) ORDER BY "accessed"
                """, bindings)
        }
        return try rows.map { row throws(StoreError) in
            guard row.count == 6, case .text(let sha256) = row[0], case .integer(let size) = row[1], case .text(let mediaType) = row[2],
                case .integer(let attempts) = row[3], case .integer(let next) = row[4],
                let reference = try? AttachmentReference(sha256: sha256, size: size, mediaType: mediaType)
            else { throw StoreError(.corrupt, "a row of the attachment queue is damaged") }
            let failure: String? = if case .text(let text) = row[5] { text } else { nil }
            return QueuedAttachment(reference: reference, attempts: Int(attempts), nextAttempt: next, failure: failure)
        }
    }

    /// The server holds every byte of `sha256`: its upload is no longer owed (and never
    /// made again).
    package func markAttachmentUploaded(_ sha256: String) throws(StoreError) {
        try sqlite { () throws(SQLiteError) in
            try database.run(
                "UPDATE \"__fm_attachments\" SET \"owed\" = 0, \"attempts\" = 0, \"nextAttempt\" = 0, \"failure\" = NULL WHERE \"sha256\" = ?",
                [.text(sha256)])
        }
    }

    /// The server refused the upload of `sha256` as it stands: one more attempt counted,
    /// the next one put off (``attachmentBackoff``, doubled each time), or given up after
    /// ``maxAttachmentAttempts``.
    /// - Returns: The queue entry as it is now; nil when it is not queued.
    @discardableResult
    package func noteAttachmentRefused(_ sha256: String, _ message: String) throws(StoreError) -> QueuedAttachment? {
        guard var entry = try owedAttachments(" AND \"sha256\" = ?", [.text(sha256)]).first else { return nil }
        entry.attempts += 1
        entry.failure = message
        let now = Int64(clamping: wall.milliseconds())
        entry.nextAttempt = entry.attempts >= Self.maxAttachmentAttempts
            ? Int64.max : now + min(Self.attachmentBackoff << Int64(entry.attempts - 1), 86_400_000)
        try sqlite { () throws(SQLiteError) in
            try database.run(
                "UPDATE \"__fm_attachments\" SET \"attempts\" = ?, \"nextAttempt\" = ?, \"failure\" = ? WHERE \"sha256\" = ?",
                [.integer(Int64(entry.attempts)), .integer(entry.nextAttempt), .text(message), .text(sha256)])
        }
        return entry
    }

    /// Makes every owed upload due again, with its refusals forgotten (after the app fixed
    /// what made the server refuse it, or to try one given up).
    public func retryAttachmentUploads() throws(StoreError) {
        try sqlite { () throws(SQLiteError) in
            try database.run("UPDATE \"__fm_attachments\" SET \"attempts\" = 0, \"nextAttempt\" = 0, \"failure\" = NULL WHERE \"owed\" = 1")
        }
    }

    /// Owes the upload of `reference` again, when the cache holds its file: the server
    /// refused a record for lacking its bytes although this device had uploaded them (its
    /// garbage collection removed them while the record waited, Specs/attachments.md §6).
    /// An upload still owed is left as it is.
    /// - Returns: Whether the cache holds the file (so that the upload is owed now).
    @discardableResult
    package func requeueAttachment(_ reference: AttachmentReference) throws(StoreError) -> Bool {
        guard try attachmentCache().size(reference.sha256) == reference.size else { return false }
        try sqlite { () throws(SQLiteError) in
            try database.run(
                """
                INSERT INTO "__fm_attachments" ("sha256", "size", "mediaType", "owed", "accessed")
                VALUES (?, ?, ?, 1, (SELECT coalesce(max("accessed"), 0) + 1 FROM "__fm_attachments"))
                ON CONFLICT ("sha256") DO UPDATE SET "owed" = 1, "attempts" = 0, "nextAttempt" = 0, "failure" = NULL WHERE "owed" = 0
                """, [.text(reference.sha256), .integer(reference.size), .text(reference.mediaType)])
        }
        return true
    }

    /// The changes the server refused because the bytes of an attachment were missing
    /// (code `attachmentMissing`), with its message, which names the hash.
    package func refusedForMissingAttachments() throws(StoreError) -> [(entity: String, id: Int64, message: String)] {
        let rows = try sqlite { () throws(SQLiteError) in
            try database.rows("SELECT \"entity\", \"id\", \"message\" FROM \"__fm_parked\" WHERE \"code\" = ?", [.text("attachmentMissing")])
        }
        return rows.compactMap { row in
            guard row.count == 3, case .text(let entity) = row[0], case .integer(let id) = row[1], case .text(let message) = row[2] else { return nil }
            return (entity, id, message)
        }
    }
}
