import FieldMergeServer
import FieldMergeProtocol
import HTTPTypes
import Hummingbird
import Logging

extension SyncResponder {
    /// Why a `POST /sync` is answered with an error before the exchange runs (an encoding
    /// it does not take, a body past the size limit); nothing has changed on the server.
    struct Refusal: Error {
        var status: HTTPResponse.Status
        var body: WireErrorBody

        init(_ status: HTTPResponse.Status, _ error: String, _ message: String) {
            self.status = status
            body = WireErrorBody(error: error, message: message)
        }
    }

    /// The header of a request's id, read from the request and echoed in the response.
    static let requestIDField = HTTPField.Name("X-Request-ID")!
    /// The length of a gzip'd answer once inflated: a client that collects the body as
    /// URLSession inflates it sizes its buffer once instead of doubling it (Specs/http.md §1).
    static let inflatedLengthField = HTTPField.Name("FieldMerge-Inflated-Length")!

    /// `POST /sync`: the body, checked against the size limit and `Content-Encoding`, goes
    /// through the server's ``SyncExchange`` (inflate, decode, the server in one
    /// transaction, encode, gzip), whose status and bytes are the answer. Its id (the
    /// request's sane `X-Request-ID`, else a new one) is in its log line and its response.
    func sync<Context: SyncRequestContext>(_ request: Request, context: Context) async throws -> Response {
        let id = RequestID.take(request.headers[Self.requestIDField])
        var logger = context.logger
        logger[metadataKey: "hb.request.id"] = nil
        logger[metadataKey: "id"] = .string(id)
        var response = try await answer(request, context: context, logger: logger)
        response.headers[Self.requestIDField] = id
        return response
    }

    private func answer<Context: SyncRequestContext>(_ request: Request, context: Context, logger: Logger) async throws -> Response {
        let start = ContinuousClock.now
        var logger = logger
        let coding = ContentCoding.requestCoding(request.headers[.contentEncoding])
        let wire: [UInt8]
        do {
            if let coding, coding != "gzip" {
                throw Refusal(.unsupportedMediaType, "unsupportedEncoding", "Content-Encoding '\(coding)' is not supported; use gzip or none")
            }
            wire = try await body(of: request)
        } catch let refusal as Refusal {
            return refused(SyncExchange.failure(Int(refusal.status.code), refusal.body), identity: context.syncIdentity, logger: logger, start: start)
        }
        let gzipResponse = ContentCoding.acceptsGzip(request.headers[.acceptEncoding])
        let reply = await exchange.run(
            wire, gzip: coding == "gzip", answerGzip: gzipResponse, identity: context.syncIdentity,
            route: HostRoute(host: host, limits: configuration.limits, codec: codec))
        if let syncRequest = reply.request { logger[metadataKey: "client"] = .string(syncRequest.clientID ?? "-") }
        if let identity = context.syncIdentity { logger[metadataKey: "user"] = .string(identity.user) }
        guard let handled = reply.handled, let syncRequest = reply.request, reply.status == SyncStatus.ok else {
            return refused(reply, identity: context.syncIdentity, logger: logger, start: start)
        }
        host.count {
            $0.syncs += 1
            if coding == "gzip" { $0.gzipRequests += 1 }
            if gzipResponse { $0.gzipResponses += 1 }
        }
        var sync = SyncObservation(answered: syncRequest, handled, bytesIn: wire.count, bytesOut: reply.body.count, entities: entities)
        sync.duration = ContinuousClock.now - start
        configuration.metrics?.record(sync)
        consoleTracker?.record(sync, request: syncRequest, handled: handled, identity: context.syncIdentity, error: nil)
        logger.info("sync", metadata: [
            "status": .stringConvertible(sync.status),
            "outcome": .string(sync.outcome.rawValue),
            "request": .string(syncRequest.requestID ?? "-"),
            "revision.before": .stringConvertible(handled.revisionBefore),
            "revision.after": .stringConvertible(handled.revisionAfter),
            "changeSets.sent": .stringConvertible(syncRequest.changeSets.count),
            "changeSets.answered": .stringConvertible(handled.response.changeSets.count),
            "changeSets.applied": .stringConvertible(sync.changeSetsApplied),
            "records.applied": .stringConvertible(sync.recordsAppliedTotal),
            "conflicts": .stringConvertible(sync.changeSetsInConflict),
            "refused": .stringConvertible(sync.refusalsTotal),
            "catchUp.records": .stringConvertible(sync.catchUpRecordsTotal),
            "catchUp.bytes": .stringConvertible(sync.catchUpBytes),
            "replayed": .stringConvertible(sync.replayed),
            "hasMore": .stringConvertible(handled.response.hasMore),
            "bytes.in": .stringConvertible(wire.count),
            "bytes.out": .stringConvertible(reply.body.count),
            "gzip": .string("\(coding == "gzip" ? "in" : "-")/\(reply.isGzip ? "out" : "-")"),
            "duration.ms": .string(Self.milliseconds(sync.duration)),
        ])
        var headers: HTTPFields = [.contentType: "application/json", .vary: "Accept-Encoding"]
        if reply.isGzip {
            headers[.contentEncoding] = "gzip"
            headers[Self.inflatedLengthField] = String(reply.responseBytes)
        }
        return Response(status: .ok, headers: headers, body: .init(byteBuffer: ByteBuffer(bytes: reply.body)))
    }

    /// The answer to a refused request: its status and JSON error body, counted and logged.
    private func refused(_ reply: SyncExchange.Reply, identity: SyncIdentity?, logger: Logger, start: ContinuousClock.Instant) -> Response {
        let body = reply.error ?? WireErrorBody(error: "http\(reply.status)", message: "")
        host.count { $0.rejected += SyncStatus.isRetryable(reply.status) ? 0 : 1 }
        var sync = SyncObservation(failed: reply.status, error: body)
        sync.duration = ContinuousClock.now - start
        configuration.metrics?.record(sync)
        consoleTracker?.record(sync, request: reply.request, handled: nil, identity: identity, error: body)
        logger.notice("sync refused", metadata: [
            "status": .stringConvertible(reply.status),
            "outcome": .string(sync.outcome.rawValue),
            "error": .string(body.error),
            "message": .string(body.message),
            "duration.ms": .string(Self.milliseconds(sync.duration)),
        ])
        return errorResponse(HTTPResponse.Status(code: reply.status), body)
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

    /// `12.345`.
    static func milliseconds(_ duration: Duration) -> String {
        let (seconds, attoseconds) = duration.components
        let micros = seconds * 1_000_000 + attoseconds / 1_000_000_000_000
        let fraction = String(micros % 1000)
        return "\(micros / 1000).\(String(repeating: "0", count: 3 - fraction.count))\(fraction)"
    }
}

/// The endpoint's host as the exchange's route: one server, or one per tenant.
struct HostRoute: SyncRoute {
    let host: RevisionServerHost
    let limits: WireLimits
    let codec: WireCodec

    func destination(for identity: SyncIdentity?) async throws(ServerError) -> SyncDestination {
        try await host.destination(for: identity, limits: limits, default: codec)
    }

    func handle(_ request: SyncRequest, identity: SyncIdentity?, at destination: SyncDestination) async throws(ServerError) -> SyncExchange.Handled {
        try await host.handle(request, identity: identity, at: destination)
    }
}
