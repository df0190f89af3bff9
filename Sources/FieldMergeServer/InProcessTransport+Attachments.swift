import FieldMerge
import FieldMergeProtocol
import FieldMergeFiles

/// The attachments of the server in this process, over its ``RevisionServer/Options/attachments``
/// store, with the rules and answers of the HTTP endpoints (Specs/attachments.md §4): uploads
/// need no record, downloads need one the transport's ``InProcessTransport/identity`` may read
/// (403 `forbidden` otherwise) and finished bytes (404 `notFound`).
extension InProcessTransport: AttachmentTransport {
    public func attachmentHeld(_ sha256: String) async throws -> AttachmentHolding {
        let store = try attachmentStore(sha256)
        switch try await served({ try await store.held(sha256) }) {
        case .absent: return .absent
        case .partial(let bytes): return .partial(bytes: bytes)
        case .complete(let size): return .complete(size: size)
        }
    }

    public func uploadAttachment(
        _ sha256: String, size: Int64, from path: String, offset: Int64, progress: (@Sendable (Int64) -> Void)?
    ) async throws -> AttachmentHolding {
        let store = try attachmentStore(sha256)
        guard size <= attachmentMaxBytes else {
            throw SyncRequestRejected(
                status: 413, code: WireError.Code.tooLarge.rawValue,
                message: "an attachment of \(size) bytes exceeds the limit of \(attachmentMaxBytes) bytes")
        }
        guard offset >= 0, offset <= size else { throw SyncRequestRejected(status: 400, code: "invalidOffset", message: "the offset is past the size") }
        let upload: any AttachmentUpload
        do {
            upload = try await store.upload(sha256, at: offset)
        } catch let error as AttachmentStoreError {
            switch error {
            case .complete(let held) where held == size: return .complete(size: held)
            case .complete(let held): throw SyncRequestRejected(status: 409, code: "sizeMismatch", message: "the attachment is held with \(held) bytes, not \(size)")
            case .offsetMismatch: throw SyncRequestRejected(status: 409, code: "offsetMismatch", message: error.description)
            default: throw SyncRequestRejected(status: 409, code: "uploadBusy", message: error.description)
            }
        }
        var held = offset
        do {
            let descriptor = try AttachmentFiles.openForReading(path)
            defer { AttachmentFiles.close(descriptor) }
            while held < size {
                let chunk = try AttachmentFiles.read(descriptor, path: path, at: held, count: Int(min(Int64(AttachmentFiles.chunkSize), size - held)))
                guard !chunk.isEmpty else { break }
                try await upload.append(chunk)
                held += Int64(chunk.count)
                progress?(held)
                try Task.checkCancellation()
            }
            guard held == size else {
                await upload.close()
                return .partial(bytes: held)
            }
            try await upload.finish(size: size)
            return .complete(size: size)
        } catch let error as AttachmentStoreError {
            throw SyncRequestRejected(status: 422, code: "hashMismatch", message: error.description)
        } catch let error as AttachmentFileError {
            await upload.close()
            throw error
        } catch {
            // Cancelled, or the store failed: what was appended stays, to resume.
            await upload.close()
            try Task.checkCancellation()
            throw TransportError("the server in this process could not store the attachment: \(error)")
        }
    }

    public func downloadAttachment(
        _ sha256: String, range: Range<Int64>?, to path: String, progress: (@Sendable (Int64) -> Void)?
    ) async throws {
        let store = try attachmentStore(sha256)
        switch try await served({ try await server.attachmentAccess(sha256, identity: identity) }) {
        case .allowed(_): break
        case .unreferenced: throw SyncRequestRejected(status: 403, code: "forbidden", message: "no record you may read references this attachment")
        }
        guard case .complete(let size) = try await served({ try await store.held(sha256) }) else {
            throw SyncRequestRejected(status: 404, code: "notFound", message: "the attachment's bytes have not been uploaded (or not all of them)")
        }
        let range = range ?? 0..<size
        guard range.lowerBound >= 0, range.upperBound <= size, range.lowerBound < size || range.isEmpty else {
            throw SyncRequestRejected(status: 416, code: "rangeNotSatisfiable", message: "the attachment has \(size) bytes")
        }
        let descriptor = try AttachmentFiles.openForAppending(path)
        defer { AttachmentFiles.close(descriptor) }
        var written: Int64 = 0
        for try await chunk in try await served({ try await store.read(sha256, range: range) }) {
            try AttachmentFiles.write(descriptor, path: path, chunk)
            written += Int64(chunk.count)
            progress?(written)
        }
    }

    /// The server's byte store, once `sha256` is known to be a digest.
    private func attachmentStore(_ sha256: String) throws -> any AttachmentStore {
        guard AttachmentReference.isSHA256(sha256) else {
            throw SyncRequestRejected(status: 400, code: "invalidHash", message: "an attachment is named by its SHA-256: 64 lowercase hexadecimal digits")
        }
        guard let store = server.options.attachments else {
            throw SyncRequestRejected(status: 404, code: "notFound", message: "the server in this process keeps no attachments")
        }
        return store
    }

    /// `body`, with a failure of the store or the server as a ``TransportError`` (as HTTP's 500).
    private func served<T>(_ body: () async throws -> T) async throws -> T {
        do { return try await body() } catch let error as SyncRequestRejected { throw error } catch {
            throw TransportError("the server in this process failed: \(error)")
        }
    }
}
