import FieldMerge
import FieldMergeProtocol
import FieldMergeSQLite
import FieldMergeFiles

extension SyncClient {
    /// Uploads every queued attachment that is due (`Store.queuedAttachments()`), before a
    /// round sends the records that reference them. For each: what the server holds first
    /// (held whole: done without sending a byte; partly: the rest from there), then marked
    /// done in the store once the server confirms, so it is never sent again.
    ///
    /// A network failure throws, failing the sync as any transport failure does: the queue
    /// is kept and the next sync resumes. A refusal as it stands (too large, the bytes do
    /// not have their hash, the cached file is gone) is counted in the store, put off, and
    /// reported in ``SyncSummary/attachmentFailures``; the sync goes on. Without an
    /// `AttachmentTransport` nothing is uploaded: the server refuses the records with
    /// `attachmentMissing`.
    ///
    /// With `requeue` (the first call of a sync) the hashes of changes refused with
    /// `attachmentMissing` that the cache holds are owed again first: the server's garbage
    /// collection may have removed bytes this device uploaded while the record waited.
    func uploadAttachments(summary: inout SyncSummary, requeue: Bool = false) async throws {
        guard let transport = transport as? any AttachmentTransport else { return }
        if requeue { try requeueRefusedForMissingBytes() }
        let due = try store.dueAttachments(at: Int64(clamping: store.wall.milliseconds()))
        guard !due.isEmpty else { return }
        // Queue marks are written outside a catch-up's transaction, which could roll back.
        try commitCatchUp()
        let cache = try store.attachmentCache()
        var uploaded: Set<String> = []
        for entry in due {
            try Task.checkCancellation()
            let reference = entry.reference
            do {
                summary.attachmentBytesUploaded += try await upload(reference, from: cache.path(reference.sha256), over: transport)
            } catch {
                // The network, the store, a cancellation: the sync fails, the queue stays.
                if error is TransportError || error is StoreError || error is CancellationError { throw error }
                let failure = AttachmentError(classifying: error)
                let noted = try store.noteAttachmentRefused(reference.sha256, failure.message)
                summary.attachmentFailures.append(AttachmentFailure(
                    reference: reference, direction: .upload, code: failure.code, message: failure.message,
                    attempts: noted?.attempts ?? 1, givenUp: noted?.isGivenUp ?? false))
                continue
            }
            try store.markAttachmentUploaded(reference.sha256)
            committed()
            uploaded.insert(reference.sha256)
            summary.attachmentsUploaded += 1
        }
        try retryRefusedForMissingBytes(uploaded)
        // Files owed were kept past the cache's limit; sent, they may go now.
        if !uploaded.isEmpty { try store.evictAttachments() }
    }

    /// Sends what the server lacks of `reference` from the cached file at `path`.
    /// - Returns: The bytes sent.
    private func upload(_ reference: AttachmentReference, from path: String, over transport: any AttachmentTransport) async throws -> Int64 {
        let (sha256, size) = (reference.sha256, reference.size)
        guard try AttachmentFiles.size(of: path) == size else {
            throw AttachmentError(.store, "the cached file of the attachment is missing or damaged: attach it again", isRetryable: false)
        }
        let progress = attachmentProgress.map { report in { @Sendable (bytes: Int64) in
            report(AttachmentProgress(sha256: sha256, direction: .upload, bytes: bytes, total: size))
        } }
        var held = try await transport.attachmentHeld(sha256)
        var sent: Int64 = 0
        // A second try when the server holds another count of bytes than it said (an
        // upload of the same hash from elsewhere moved on meanwhile).
        for attempt in 0..<3 {
            let offset: Int64
            switch held {
            case .complete(let heldSize):
                guard heldSize == size else {
                    throw SyncRequestRejected(status: 409, code: "sizeMismatch", message: "the server holds \(heldSize) bytes under this hash, not \(size)")
                }
                return sent
            case .absent: offset = 0
            case .partial(let bytes): offset = bytes <= size ? bytes : 0
            }
            do {
                held = try await transport.uploadAttachment(sha256, size: size, from: path, offset: offset, progress: progress)
                sent += size - offset
                if case .complete = held { return sent }
            } catch let rejected as SyncRequestRejected {
                guard rejected.code == "offsetMismatch" || rejected.code == "uploadBusy", attempt < 2 else { throw Self.retryLater(rejected) }
                held = try await transport.attachmentHeld(sha256)
            }
        }
        throw TransportError("the upload of attachment \(sha256) did not complete; the next sync resumes it")
    }

    /// Another upload of the hash holds it (a device uploading the same photo, or this
    /// one's dropped connection the server has not noticed yet): retry shortly.
    private static func retryLater(_ rejected: SyncRequestRejected) -> any Error {
        guard rejected.code == "offsetMismatch" || rejected.code == "uploadBusy" else { return rejected }
        return TransportError("the server is receiving this attachment in another upload; try again shortly (\(rejected.message))")
    }

    /// Sends again the changes the server refused because the bytes of an attachment in
    /// `uploaded` were missing (`attachmentMissing`): they are there now.
    private func retryRefusedForMissingBytes(_ uploaded: Set<String>) throws {
        guard !uploaded.isEmpty else { return }
        for refused in try store.refusedForMissingAttachments() where uploaded.contains(where: { refused.message.contains($0) }) {
            try store.retry(refused.entity, id: refused.id)
        }
    }

    /// Owes again the uploads of the hashes that refused changes name and the cache holds.
    private func requeueRefusedForMissingBytes() throws {
        for refused in try store.refusedForMissingAttachments() {
            guard let entity = store.schema.entity(refused.entity), let record = try store.untyped.record(refused.entity, id: refused.id) else {
                continue
            }
            for index in entity.fields.indices where entity.fields[index].type == .attachment {
                guard case .text(let text) = record.values[index], let reference = try? AttachmentReference(parsing: text),
                    refused.message.contains(reference.sha256)
                else { continue }
                try store.requeueAttachment(reference)
            }
        }
    }
}
