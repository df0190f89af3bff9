import FieldMerge
import FieldMergeProtocol
import FieldMergeServer
import HTTPTypes
import Hummingbird

extension SyncResponder {
    static let uploadOffsetField = HTTPField.Name("Upload-Offset")!
    static let uploadLengthField = HTTPField.Name("Upload-Length")!
    static let uploadCompleteField = HTTPField.Name("Upload-Complete")!
    static let contentTypeOptionsField = HTTPField.Name("X-Content-Type-Options")!

    /// `PUT`, `HEAD` and `GET /attachments/<sha256>` (Specs/attachments.md). The hash is
    /// checked before anything touches the store; downloads need a record the caller may
    /// read that references the attachment. On a multi-tenant endpoint each tenant's bytes
    /// are its server's own (`RevisionServer.Options.attachments`), reached through the
    /// tenant the token names: an upload creates the tenant's data set when it has none (the
    /// bytes come before the record that references them), a status or a download does not.
    func attachment<Context: SyncRequestContext>(_ request: Request, context: Context) async throws -> Response {
        guard let attachments = configuration.attachments else { return notFound(request) }
        guard [.get, .head, .put].contains(request.method) else { return methodNotAllowed(allow: "GET, HEAD, PUT") }
        let prefix = "/attachments/"
        let path = request.uri.path
        guard path.hasPrefix(prefix), AttachmentReference.isSHA256(path.dropFirst(prefix.count)) else {
            return errorResponse(
                .badRequest, WireErrorBody(error: "invalidHash", message: "an attachment is named by its SHA-256: /attachments/ and 64 lowercase hexadecimal digits"))
        }
        let sha256 = String(path.dropFirst(prefix.count))
        switch host.source {
        case .single(let server):
            guard let store = attachments.store ?? server.attachmentStore else { return notFound(request) }
            return try await attachment(sha256, request, identity: context.syncIdentity, server: server, store: store, limit: attachments.maxBytes)
        case .tenants(let directory):
            let lease: TenantDirectory.Lease
            do throws(ServerError) {
                guard let tenant = context.syncIdentity?.tenant else { throw ServerError(.forbidden, "the request's identity names no tenant") }
                lease = try await directory.lease(tenant, request.method == .put ? .create : .existing)
            } catch {
                return errorResponse(HTTPResponse.Status(code: error.status), error.body)
            }
            do {
                let response: Response
                if let store = lease.server.attachmentStore {
                    response = try await attachment(sha256, request, identity: context.syncIdentity, server: lease.server, store: store, limit: attachments.maxBytes)
                } else if lease.exists {
                    response = notFound(request)
                } else if request.method == .head {
                    // No data set yet: nothing held.
                    response = Response(status: .notFound, headers: [Self.uploadOffsetField: "0", Self.uploadCompleteField: "?0", .contentLength: "0"])
                } else {
                    response = errorResponse(.forbidden, Self.unreferenced)
                }
                await lease.release()
                return response
            } catch {
                await lease.release()
                throw error
            }
        }
    }

    /// The answer to a download no record the caller reads allows.
    static let unreferenced = WireErrorBody(error: "forbidden", message: "no record you may read references this attachment")

    /// One request on `store`, the bytes of `server`'s data set.
    private func attachment(
        _ sha256: String, _ request: Request, identity: SyncIdentity?, server: RevisionServer, store: any AttachmentStore, limit: Int64
    ) async throws -> Response {
        switch request.method {
        case .put: return try await upload(sha256, request, store, limit: limit)
        case .head: return try await uploadStatus(sha256, store)
        default: return try await download(sha256, request, identity: identity, server: server, store)
        }
    }

    /// `PUT`: appends the body at `Upload-Offset` (0 when absent) of an attachment of
    /// `Upload-Length` bytes (else the offset plus `Content-Length`), reading it chunk by
    /// chunk; finishes it once every byte is held and its hash matches.
    private func upload(_ sha256: String, _ request: Request, _ store: any AttachmentStore, limit: Int64) async throws -> Response {
        func refuse(_ status: HTTPResponse.Status, _ error: String, _ message: String) -> Response {
            errorResponse(status, WireErrorBody(error: error, message: message))
        }
        let offset: Int64
        if let text = request.headers[Self.uploadOffsetField] {
            guard let value = Int64(text), value >= 0 else { return refuse(.badRequest, "invalidOffset", "Upload-Offset must be a byte count") }
            offset = value
        } else {
            offset = 0
        }
        let contentLength = request.headers[.contentLength].flatMap { Int64($0) }
        let size: Int64
        if let text = request.headers[Self.uploadLengthField] {
            guard let value = Int64(text), value >= 0 else { return refuse(.badRequest, "invalidLength", "Upload-Length must be a byte count") }
            size = value
        } else if let contentLength, contentLength <= Int64.max - offset {
            size = offset + contentLength
        } else {
            return refuse(.lengthRequired, "lengthRequired", "say the attachment's size with Upload-Length (or Content-Length for a whole upload)")
        }
        guard size <= limit else {
            return refuse(
                .contentTooLarge, WireError.Code.tooLarge.rawValue, "an attachment of \(size) bytes exceeds the limit of \(limit) bytes")
        }
        guard offset <= size, (contentLength ?? 0) <= size - offset else {
            return refuse(.badRequest, "invalidOffset", "the body would end past the attachment's \(size) bytes")
        }
        let upload: any AttachmentUpload
        do {
            upload = try await store.upload(sha256, at: offset)
        } catch let error as AttachmentStoreError {
            switch error {
            case .complete(let held) where held == size:
                return uploaded(sha256, size: size, held: held, status: .ok)
            case .offsetMismatch(let held):
                var response = refuse(.conflict, "offsetMismatch", error.description)
                response.headers[Self.uploadOffsetField] = String(held)
                return response
            case .complete(let held):
                return refuse(.conflict, "sizeMismatch", "the attachment is held with \(held) bytes, not \(size)")
            default:
                return refuse(.conflict, "uploadBusy", error.description)
            }
        }
        do {
            var held = offset
            for try await chunk in request.body {
                guard held + Int64(chunk.readableBytes) <= size else {
                    await upload.close()
                    return refuse(.badRequest, "invalidOffset", "the body goes past the attachment's \(size) bytes; bytes up to \(held) are kept")
                }
                try await upload.append(Array(chunk.readableBytesView))
                held += Int64(chunk.readableBytes)
            }
            guard held == size else {
                await upload.close()
                return uploaded(sha256, size: size, held: held, status: .ok)
            }
            try await upload.finish(size: size)
        } catch let error as AttachmentStoreError {
            return refuse(.unprocessableContent, "hashMismatch", error.description)
        } catch {
            // The client went away or the store failed: what was written stays, to resume.
            await upload.close()
            throw error
        }
        return uploaded(sha256, size: size, held: size, status: .created)
    }

    /// `{"sha256":…,"size":…,"held":…,"complete":…}`, with `Upload-Offset`.
    private func uploaded(_ sha256: String, size: Int64, held: Int64, status: HTTPResponse.Status) -> Response {
        let json = "{\"sha256\":\"\(sha256)\",\"size\":\(size),\"held\":\(held),\"complete\":\(held == size)}"
        return Response(
            status: status,
            headers: [.contentType: "application/json", Self.uploadOffsetField: String(held), Self.uploadCompleteField: held == size ? "?1" : "?0"],
            body: .init(byteBuffer: ByteBuffer(string: json)))
    }

    /// `HEAD`: how many bytes are held (`Upload-Offset`) and whether they are finished
    /// (`Upload-Complete: ?1`, with `Content-Length`); 404 when none are.
    private func uploadStatus(_ sha256: String, _ store: any AttachmentStore) async throws -> Response {
        switch try await store.held(sha256) {
        case .absent:
            return Response(status: .notFound, headers: [Self.uploadOffsetField: "0", Self.uploadCompleteField: "?0", .contentLength: "0"])
        case .partial(let bytes):
            return Response(status: .ok, headers: [Self.uploadOffsetField: String(bytes), Self.uploadCompleteField: "?0", .contentLength: "0"])
        case .complete(let size):
            return Response(
                status: .ok,
                headers: [
                    Self.uploadOffsetField: String(size), Self.uploadCompleteField: "?1", .contentLength: String(size), .acceptRanges: "bytes",
                ])
        }
    }

    /// `GET`: the bytes, or the range `Range` asks for, streamed in the store's chunks, as
    /// the media type of the reference that allowed the download. `nosniff` and a sandbox
    /// keep a browser from running what a record calls `text/html` on the server's origin.
    private func download(
        _ sha256: String, _ request: Request, identity: SyncIdentity?, server: RevisionServer, _ store: any AttachmentStore
    ) async throws -> Response {
        let mediaType: String
        switch try await server.attachmentAccess(sha256, identity: identity) {
        case .allowed(let type): mediaType = type
        case .unreferenced: return errorResponse(.forbidden, Self.unreferenced)
        }
        guard case .complete(let size) = try await store.held(sha256) else {
            return errorResponse(.notFound, WireErrorBody(error: "notFound", message: "the attachment's bytes have not been uploaded (or not all of them)"))
        }
        var headers: HTTPFields = [
            .contentType: mediaType, .acceptRanges: "bytes", .eTag: "\"\(sha256)\"", Self.contentTypeOptionsField: "nosniff",
            .contentSecurityPolicy: "sandbox",
        ]
        let range: Range<Int64>, status: HTTPResponse.Status
        switch ByteRange(request.headers[.range], size: size) {
        case .whole: (range, status) = (0..<size, .ok)
        case .part(let part):
            (range, status) = (part, .partialContent)
            headers[.contentRange] = "bytes \(part.lowerBound)-\(part.upperBound - 1)/\(size)"
        case .unsatisfiable:
            var response = errorResponse(.rangeNotSatisfiable, WireErrorBody(error: "rangeNotSatisfiable", message: "the attachment has \(size) bytes"))
            response.headers[.contentRange] = "bytes */\(size)"
            return response
        }
        let chunks = try await store.read(sha256, range: range)
        return Response(
            status: status, headers: headers,
            body: ResponseBody(contentLength: Int(range.count)) { writer in
                for try await chunk in chunks { try await writer.write(ByteBuffer(bytes: chunk)) }
                try await writer.finish(nil)
            })
    }
}
