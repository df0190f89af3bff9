import FieldMergeServer
import FieldMergeProtocol
import Hummingbird
import Logging

extension SyncResponder {
    /// Why a `POST /sync` is answered with an error; nothing has changed on the server.
    struct Refusal: Error {
        var status: HTTPResponse.Status
        var body: WireErrorBody

        init(_ status: HTTPResponse.Status, _ error: String, _ message: String) {
            self.status = status
            body = WireErrorBody(error: error, message: message)
        }

        /// 413 for bodies past a size limit, 400 for everything else the codec refuses.
        init(_ error: WireError) {
            switch error.code {
            case .tooLarge, .gzipTooLarge: status = .contentTooLarge
            case .incompatibleSchema: status = .conflict
            default: status = .badRequest
            }
            body = WireErrorBody(error)
        }

        /// 400 for a request the server refuses as a whole, 403 for one that reaches no data
        /// set, 500 when its storage fails or holds damaged data.
        init(_ error: ServerError) {
            switch error.code {
            case .storage, .corrupt, .schemaMismatch: status = .internalServerError
            case .forbidden: status = .forbidden
            case .badRequest, .unsupportedProtocolVersion: status = .badRequest
            }
            body = WireErrorBody(error: error.code.rawValue, message: error.message)
        }
    }

    /// `POST /sync`: body → (gunzip) → decode → the server (one transaction) → encode → (gzip).
    func sync<Context: SyncRequestContext>(_ request: Request, context: Context) async throws -> Response {
        let start = ContinuousClock.now
        var logger = context.logger
        do {
            let coding = ContentCoding.requestCoding(request.headers[.contentEncoding])
            if let coding, coding != "gzip" {
                throw Refusal(.unsupportedMediaType, "unsupportedEncoding", "Content-Encoding '\(coding)' is not supported; use gzip or none")
            }
            let wire = try await body(of: request)
            let json = try decompressed(wire, gzip: coding == "gzip")
            let codec: WireCodec
            do throws(ServerError) {
                codec = try await host.codec(for: context.syncIdentity, limits: configuration.limits, default: self.codec)
            } catch {
                throw Refusal(error)
            }
            let syncRequest: SyncRequest
            do throws(WireError) { syncRequest = try codec.decodeRequest(json) } catch { throw Refusal(error) }
            logger[metadataKey: "client"] = .string(syncRequest.clientID ?? "-")
            if let identity = context.syncIdentity { logger[metadataKey: "user"] = .string(identity.user) }
            let outcome: RevisionServerHost.Outcome
            do throws(ServerError) {
                outcome = try await host.handle(syncRequest, identity: context.syncIdentity)
            } catch {
                throw Refusal(error)
            }

            // A client of an older schema version is answered in its own.
            var encoded = codec.codec(answering: syncRequest).encode(outcome.response)
            let gzipResponse = ContentCoding.acceptsGzip(request.headers[.acceptEncoding])
            if gzipResponse { encoded = Gzip.compress(encoded, level: configuration.gzipLevel) }
            host.count {
                $0.syncs += 1
                if coding == "gzip" { $0.gzipRequests += 1 }
                if gzipResponse { $0.gzipResponses += 1 }
            }
            let conflicts = outcome.response.changeSets.reduce(0) { $0 + ($1.conflict == true ? 1 : 0) }
            logger.info("sync", metadata: [
                "request": .string(syncRequest.requestID ?? "-"),
                "revision.before": .stringConvertible(outcome.revisionBefore),
                "revision.after": .stringConvertible(outcome.revisionAfter),
                "changeSets.sent": .stringConvertible(syncRequest.changeSets.count),
                "changeSets.answered": .stringConvertible(outcome.response.changeSets.count),
                "conflicts": .stringConvertible(conflicts),
                "hasMore": .stringConvertible(outcome.response.hasMore),
                "bytes.in": .stringConvertible(wire.count),
                "bytes.out": .stringConvertible(encoded.count),
                "gzip": .string("\(coding == "gzip" ? "in" : "-")/\(gzipResponse ? "out" : "-")"),
                "duration.ms": .string(Self.milliseconds(ContinuousClock.now - start)),
            ])
            var headers: HTTPFields = [.contentType: "application/json", .vary: "Accept-Encoding"]
            if gzipResponse { headers[.contentEncoding] = "gzip" }
            return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: encoded)))
        } catch let refusal as Refusal {
            host.count { $0.rejected += refusal.status.code == 500 ? 0 : 1 }
            logger.notice("sync refused", metadata: [
                "status": .stringConvertible(refusal.status.code),
                "error": .string(refusal.body.error),
                "message": .string(refusal.body.message),
                "duration.ms": .string(Self.milliseconds(ContinuousClock.now - start)),
            ])
            return errorResponse(refusal.status, refusal.body)
        }
    }

    /// The body as it arrived, refused past ``SyncHTTPServer/Configuration/maxRequestBytes``
    /// (by its `Content-Length` before reading, or while reading a chunked one).
    ///
    /// - Throws: ``Refusal`` (413), or the connection's error when the client goes away.
    private func body(of request: Request) async throws -> [UInt8] {
        let limit = configuration.maxRequestBytes
        let declared = request.headers[.contentLength].flatMap { Int($0) }
        if let declared, declared > limit { throw tooLarge(declared) }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(min(declared ?? 16_384, limit))
        for try await chunk in request.body {
            guard bytes.count + chunk.readableBytes <= limit else { throw tooLarge(bytes.count + chunk.readableBytes) }
            bytes.append(contentsOf: chunk.readableBytesView)
        }
        return bytes
    }

    private func tooLarge(_ size: Int) -> Refusal {
        Refusal(
            .contentTooLarge, WireError.Code.tooLarge.rawValue,
            "request body of \(size) bytes or more exceeds the limit of \(configuration.maxRequestBytes) bytes")
    }

    private func decompressed(_ bytes: [UInt8], gzip: Bool) throws(Refusal) -> [UInt8] {
        guard gzip else { return bytes }
        // Inflated against the request limit: a small bomb costs no more memory than a
        // large plain body may.
        let limit = min(configuration.maxRequestBytes, configuration.limits.maxBytes, configuration.limits.maxDecompressedBytes)
        do { return try Gzip.decompress(bytes, limit: limit) } catch { throw Refusal(error) }
    }

    /// `12.345`.
    static func milliseconds(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        let micros = seconds * 1_000_000 + attoseconds / 1_000_000_000_000
        let fraction = String(micros % 1000)
        return "\(micros / 1000).\(String(repeating: "0", count: 3 - fraction.count))\(fraction)"
    }
}
