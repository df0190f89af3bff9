import FieldMerge
import FieldMergeProtocol
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
import FieldMergeFiles
#endif

/// Attachments over the server's `/attachments/<sha256>` endpoints (Specs/attachments.md
/// §4), beside the sync URL (`…/sync` → `…/attachments/<sha256>`), with the same headers,
/// token and error classification as `POST /sync`: 5xx, 408, 429 and network failures
/// throw `TransportError`; other statuses `SyncRequestRejected` with the server's code, and
/// so does 501 (a server that serves no attachments, such as an older multi-tenant endpoint: not worth retrying).
///
/// Uploads go in pieces of ``Configuration/attachmentPieceBytes`` read from the file, one
/// `PUT` each with `Upload-Offset` and `Upload-Length`: memory holds one piece, and a piece
/// that fails is resumed from what the server holds. Downloads of a range go in pieces of
/// ``Configuration/attachmentDownloadPieceBytes``, one `GET` with `Range` each, written into
/// the file as they arrive.
///
/// Why pieces for downloads: on Linux, URLSession hands a body to its delegate through a
/// queue nothing slows down, so when the file's writes fall behind a fast network what
/// waits is kept in memory (one 1 GiB `GET` over loopback peaked at 292 MB resident).
extension HTTPTransport: AttachmentTransport {
    /// `…/attachments/<sha256>` beside the sync endpoint.
    public func attachmentURL(_ sha256: String) -> URL {
        url.deletingLastPathComponent().appendingPathComponent("attachments").appendingPathComponent(sha256)
    }

    public func attachmentHeld(_ sha256: String) async throws -> AttachmentHolding {
        try Self.checkHash(sha256)
        let (status, headers, body) = try await exchange(attachmentRequest(sha256, method: "HEAD"))
        if status == 404 { return .absent }
        guard (200..<300).contains(status) else { throw failure(status, body, sha256) }
        return try Self.holding(headers, sha256)
    }

    public func uploadAttachment(
        _ sha256: String, size: Int64, from path: String, offset: Int64, progress: (@Sendable (Int64) -> Void)?
    ) async throws -> AttachmentHolding {
        try Self.checkHash(sha256)
        let descriptor = try AttachmentFiles.openForReading(path)
        defer { AttachmentFiles.close(descriptor) }
        var held = offset
        repeat {
            try Task.checkCancellation()
            let count = Int(min(Int64(configuration.attachmentPieceBytes), size - held))
            let piece = try AttachmentFiles.read(descriptor, path: path, at: held, count: count)
            guard piece.count == count else { throw AttachmentFileError(call: "read", path: path, code: 5 /* EIO: the file shrank */) }
            var request = attachmentRequest(sha256, method: "PUT")
            request.setValue(String(held), forHTTPHeaderField: "Upload-Offset")
            request.setValue(String(size), forHTTPHeaderField: "Upload-Length")
            request.setValue("application/octet-stream", forHTTPHeaderField: "Content-Type")
            request.httpBody = Data(piece)
            let (status, headers, body) = try await exchange(request)
            guard (200..<300).contains(status) else { throw failure(status, body, sha256) }
            let holding = try Self.holding(headers, sha256)
            switch holding {
            case .complete: progress?(size); return holding
            case .partial(let bytes):
                guard bytes > held else { throw TransportError("the server kept none of the upload of \(sha256)") }
                held = bytes
                progress?(held)
            case .absent: throw TransportError("the server answered an upload of \(sha256) without Upload-Offset")
            }
        } while held < size
        return .partial(bytes: held)
    }

    public func downloadAttachment(
        _ sha256: String, range: Range<Int64>?, to path: String, progress: (@Sendable (Int64) -> Void)?
    ) async throws {
        try await download(sha256, range: range, to: path, progress: progress, received: nil)
    }

    /// Each piece URLSession delivers goes to `received` once it is in the file, on the
    /// session's delegate queue: the caller hashes it without reading the file back.
    public func downloadAttachment(
        _ sha256: String, range: Range<Int64>?, to path: String, progress: (@Sendable (Int64) -> Void)?,
        received: @escaping @Sendable (UnsafeRawBufferPointer) -> Void
    ) async throws {
        try await download(sha256, range: range, to: path, progress: progress, received: received)
    }

    private func download(
        _ sha256: String, range: Range<Int64>?, to path: String, progress: (@Sendable (Int64) -> Void)?,
        received: (@Sendable (UnsafeRawBufferPointer) -> Void)?
    ) async throws {
        try Self.checkHash(sha256)
        guard let range else { return _ = try await downloadPiece(sha256, range: nil, to: path, progress: progress, received: received) }
        let step = Int64(configuration.attachmentDownloadPieceBytes)
        var start = range.lowerBound
        while start < range.upperBound {
            try Task.checkCancellation()
            let piece = start..<min(range.upperBound, start + step)
            let done = start - range.lowerBound
            var pieceProgress: (@Sendable (Int64) -> Void)?
            if let progress { pieceProgress = { progress(done + $0) } }
            let status = try await downloadPiece(sha256, range: piece, to: path, progress: pieceProgress, received: received)
            // 200: something on the way ignored the range and sent every byte (from 0: the
            // caller's check of the hash tells whether that was the file it needed).
            if status == 200 { return }
            start = piece.upperBound
        }
    }

    /// One `GET` of `range` (all of it when nil), appended to the file at `path`.
    /// - Returns: The status, 200 or 206.
    private func downloadPiece(
        _ sha256: String, range: Range<Int64>?, to path: String, progress: (@Sendable (Int64) -> Void)?,
        received: (@Sendable (UnsafeRawBufferPointer) -> Void)?
    ) async throws -> Int {
        var request = attachmentRequest(sha256, method: "GET")
        if let range {
            guard !range.isEmpty else { return 206 }
            request.setValue("bytes=\(range.lowerBound)-\(range.upperBound - 1)", forHTTPHeaderField: "Range")
        }
        let descriptor = try AttachmentFiles.openForAppending(path)
        defer { AttachmentFiles.close(descriptor) }
        let outcome = try await authorized { token in
            var request = request
            if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
            let outcome: FileDownload.Outcome
            do {
                outcome = try await attachmentFiles.run(
                    request, on: attachmentSession.session, into: descriptor, path: path, progress: progress, received: received)
            } catch let error as AttachmentFileError {
                throw error
            } catch {
                try Task.checkCancellation()
                throw TransportError(Self.describe(error))
            }
            if outcome.status == 401 { throw failure(401, outcome.errorBody, sha256) }
            return outcome
        }
        guard outcome.status == 200 || outcome.status == 206 else { throw failure(outcome.status, outcome.errorBody, sha256) }
        return outcome.status
    }

    /// A request to the attachment's URL, with the configured headers.
    private func attachmentRequest(_ sha256: String, method: String) -> URLRequest {
        var request = URLRequest(
            url: attachmentURL(sha256), cachePolicy: .reloadIgnoringLocalCacheData, timeoutInterval: configuration.requestTimeout)
        request.httpMethod = method
        for (name, value) in configuration.headers { request.setValue(value, forHTTPHeaderField: name) }
        return request
    }

    /// One exchange with a small answer (HEAD, PUT): status, headers and body.
    private func exchange(_ request: URLRequest) async throws -> (Int, [AnyHashable: Any], [UInt8]) {
        try await authorized { token in
            var request = request
            if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
            let bytes: [UInt8], response: URLResponse
            do {
                (bytes, response) = try await download.data(for: request, on: session, limit: 1 << 20)
            } catch {
                try Task.checkCancellation()
                throw TransportError(Self.describe(error))
            }
            guard let http = response as? HTTPURLResponse else { throw TransportError("not an HTTP response from \(request.url!)") }
            if http.statusCode == 401 { throw failure(401, bytes, request.url!.lastPathComponent) }
            return (http.statusCode, http.allHeaderFields, bytes)
        }
    }

    /// `body` with the token, and once more with a refreshed one after a 401.
    private func authorized<T>(_ body: (String?) async throws -> T) async throws -> T {
        do {
            return try await body(try await token?(false))
        } catch let rejected as SyncRequestRejected {
            guard rejected.status == 401, token != nil else { throw rejected }
            return try await body(try await token?(true))
        }
    }

    /// The sync endpoint's classification, but for 501: a server that serves no attachments
    /// (an older multi-tenant endpoint) will not later, so it refuses rather than fails.
    /// Package-wide: `NIOAttachmentTransport` classifies alike.
    package func failure(_ status: Int, _ body: [UInt8], _ sha256: String) -> any Error {
        let origin = attachmentURL(sha256).absoluteString
        guard status == 501 else { return SyncStatus.clientError(status: status, body: body, origin: origin) }
        let detail = WireErrorBody(decoding: body)
        return SyncRequestRejected(
            status: 501, code: detail?.error ?? "notImplemented", message: detail?.message ?? "HTTP 501 from \(origin): attachments are not served")
    }

    /// `Upload-Offset` and `Upload-Complete` as what the server holds.
    private static func holding(_ headers: [AnyHashable: Any], _ sha256: String) throws -> AttachmentHolding {
        func header(_ name: String) -> String? {
            headers.first { ($0.key as? String)?.lowercased() == name.lowercased() }?.value as? String
        }
        return try holding(uploadOffset: header("Upload-Offset"), uploadComplete: header("Upload-Complete"), sha256)
    }

    /// What the server holds, from the values of `Upload-Offset` and `Upload-Complete`.
    package static func holding(uploadOffset: String?, uploadComplete: String?, _ sha256: String) throws -> AttachmentHolding {
        guard let text = uploadOffset, let offset = Int64(text), offset >= 0 else {
            throw TransportError("the server's answer about attachment \(sha256) has no Upload-Offset")
        }
        return uploadComplete == "?1" ? .complete(size: offset) : .partial(bytes: offset)
    }

    /// Refuses (400 `invalidHash`) a name that is not a SHA-256 before anything is sent.
    package static func checkHash(_ sha256: String) throws {
        guard AttachmentReference.isSHA256(sha256) else {
            throw SyncRequestRejected(status: 400, code: "invalidHash", message: "an attachment is named by its SHA-256: 64 lowercase hexadecimal digits")
        }
    }
}
