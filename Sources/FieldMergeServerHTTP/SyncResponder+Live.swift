import FieldMergeServer
import FieldMergeProtocol
import Hummingbird
import ServiceLifecycle
import Synchronization

extension SyncResponder {
    /// `GET /sync/events`: the server's live events as Server-Sent Events (Specs/live.md),
    /// for the request's identity and, with tenants, its tenant: `ready` first, then
    /// `changes` and `poke`, a keep-alive comment after every quiet
    /// ``SyncHTTPServer/Configuration/liveKeepAlive``, until the connection's lifetime ends
    /// (``SyncHTTPServer/Configuration/liveLifetime``, less up to a tenth at random so that a
    /// fleet does not reconnect at once), the server shuts down or the client goes.
    func events<Context: SyncRequestContext>(_ request: Request, context: Context) async throws -> Response {
        let subscription: Subscription
        switch await subscribe(request, context: context) {
        case .success(let made): subscription = made
        case .failure(let refusal): return refusal.response
        }
        // A tenant without a data set has an empty server: the device comes back soon, when
        // a write may have created it.
        let absent = subscription.destination.lease.map { !$0.exists } ?? false
        let lifetime = absent ? min(configuration.liveLifetime, .seconds(30)) : configuration.liveLifetime * Double.random(in: 0.9...1)
        let keepAlive = configuration.liveKeepAlive
        host.count { $0.liveSubscriptions += 1 }
        let metrics = configuration.metrics
        let headers: HTTPFields = [.contentType: "text/event-stream", .cacheControl: "no-store", .init("X-Accel-Buffering")!: "no"]
        return Response(status: .ok, headers: headers, body: ResponseBody { writer in
            // Counted while the stream is written: a response dropped unwritten never counts.
            metrics?.liveSubscribers("events", by: 1)
            defer {
                metrics?.liveSubscribers("events", by: -1)
                subscription.release()
            }
            try await Self.stream(subscription, to: &writer, lifetime: lifetime, keepAlive: keepAlive)
            try await writer.finish(nil)
        })
    }

    /// `GET /sync/poll?since=N&wait=S`: the first event past revision N as the one event of a
    /// `text/event-stream` body, or 204 after S seconds (30 by default, at most
    /// ``SyncHTTPServer/Configuration/longPollMaxWait``) with nothing new; for networks whose
    /// proxies hold Server-Sent Events back.
    func poll<Context: SyncRequestContext>(_ request: Request, context: Context) async throws -> Response {
        let query = request.uri.queryParameters
        guard let since = query["since"].map({ Int64(String($0)) }) ?? 0, since >= 0 else {
            return errorResponse(.badRequest, WireErrorBody(error: "badRequest", message: "'since' must be a revision (an integer ≥ 0)"))
        }
        guard let wait = query["wait"].map({ Double(String($0)) }) ?? 30, wait.isFinite, wait >= 0 else {
            return errorResponse(.badRequest, WireErrorBody(error: "badRequest", message: "'wait' must be a number of seconds ≥ 0"))
        }
        let subscription: Subscription
        switch await subscribe(request, context: context) {
        case .success(let made): subscription = made
        case .failure(let refusal): return refusal.response
        }
        configuration.metrics?.liveSubscribers("poll", by: 1)
        defer {
            configuration.metrics?.liveSubscribers("poll", by: -1)
            subscription.release()
        }
        let longest = min(Duration.milliseconds(Int64(wait * 1000)), configuration.longPollMaxWait)
        guard let event = await Self.first(subscription.outputs, after: since, within: longest) else {
            return Response(status: .noContent, headers: [.cacheControl: "no-store"])
        }
        return Response(
            status: .ok, headers: [.contentType: "text/event-stream", .cacheControl: "no-store"],
            body: .init(byteBuffer: ByteBuffer(bytes: event.serverSentEvent)))
    }

    /// A live subscription and what holds it (a tenant's lease), released once: when the
    /// response ends, or when it is dropped without its body ever being written (a client
    /// gone before the head was sent), so that a tenant is never held in use for nothing.
    ///
    /// The hub hands its events straight to `outputs`, the stream the response writes
    /// from (keep-alives join it there; the connection's lifetime, a graceful shutdown or
    /// the hub finishes it): no task between the hub and the writer, one wake-up per event
    /// and subscriber.
    struct Subscription: Sendable {
        var outputs: AsyncStream<Output>
        var sink: AsyncStream<Output>.Continuation
        var destination: SyncDestination
        private let hold: LeaseHold

        init(outputs: AsyncStream<Output>, sink: AsyncStream<Output>.Continuation, destination: SyncDestination) {
            self.outputs = outputs
            self.sink = sink
            self.destination = destination
            hold = LeaseHold(destination.lease, ending: sink)
        }

        func release() { hold.release() }
    }

    /// Ends a subscription once, at the latest when the last reference goes: its stream
    /// finishes, so that the hub forgets the subscriber at once (not only when the last
    /// reference to the stream goes), and a tenant's lease is released.
    final class LeaseHold: Sendable {
        private let lease: TenantDirectory.Lease?
        private let sink: AsyncStream<Output>.Continuation
        private let released = Atomic(false)

        init(_ lease: TenantDirectory.Lease?, ending sink: AsyncStream<Output>.Continuation) {
            self.lease = lease
            self.sink = sink
        }

        func release() {
            guard !released.exchange(true, ordering: .relaxed) else { return }
            sink.finish()
            guard let lease else { return }
            Task { await lease.release() }
        }

        deinit { release() }
    }

    /// Subscribes the request's identity at its server (found as for `POST /sync`); a device
    /// that names no schema fingerprint (`schema=`) or one of a version the server does not
    /// answer is sent pokes only (one of an older version it answers, pages in that version),
    /// and with scopes so is one that does not say `pages=scoped` (it checks a page's holdings).
    /// One that says `encoding=gzip` gets its larger pages gzip'd in base64 (`changes-gzip`).
    private func subscribe<Context: SyncRequestContext>(_ request: Request, context: Context) async -> Result<Subscription, LiveRefusal> {
        let identity = context.syncIdentity
        let destination: SyncDestination
        do {
            destination = try await host.destination(for: identity, limits: configuration.limits, default: codec)
        } catch {
            return .failure(LiveRefusal(response: errorResponse(HTTPResponse.Status(code: error.status), error.body)))
        }
        let fingerprint = request.uri.queryParameters["schema"].map(String.init)
        let subscriptions: ScopeHoldings?
        switch Self.subscriptions(request) {
        case .success(let roots): subscriptions = roots
        case .failure(let message):
            if let lease = destination.lease { await lease.release() }
            return .failure(LiveRefusal(response: errorResponse(.badRequest, WireErrorBody(error: "badRequest", message: message.text))))
        }
        // A device of an older version the server answers gets pages in its version.
        let version = destination.codec.version(fingerprint: fingerprint)
        let hub = destination.server.live
        // The hub's bound on what a reader that does not read keeps, and room for two
        // keep-alives besides.
        let (outputs, sink) = AsyncStream.makeStream(of: Output.self, bufferingPolicy: .bufferingNewest(max(1, hub.options.buffer) + 2))
        do {
            let id = try hub.subscribe(
                identity: identity, takesPages: fingerprint == destination.codec.schemaFingerprint || version != nil,
                subscriptions: subscriptions, scopedPages: request.uri.queryParameters["pages"] == "scoped", version: version,
                compressed: request.uri.queryParameters["encoding"] == "gzip",
                sink: LiveHub.Sink(yield: { sink.yield(.event($0)) }, finish: { sink.finish() }))
            // The response ended, or was dropped unwritten: the hub forgets the subscriber.
            sink.onTermination = { [weak hub] _ in hub?.unsubscribe(id) }
            return .success(Subscription(outputs: outputs, sink: sink, destination: destination))
        } catch {
            if let lease = destination.lease { await lease.release() }
            return .failure(LiveRefusal(response: errorResponse(HTTPResponse.Status(code: error.status), error.body)))
        }
    }

    struct LiveRefusal: Error { var response: Response }

    /// What the event stream writes next; it ends when the stream finishes.
    enum Output: Sendable { case event(LiveEvent), keepAlive }

    /// Writes a subscription's events as Server-Sent Events, with keep-alives, until
    /// `lifetime` passes, the events end (the server closed), a graceful shutdown begins or a
    /// write fails (the client went, or stopped reading past the connection's write timeout).
    static func stream(
        _ subscription: Subscription, to writer: inout any ResponseBodyWriter, lifetime: Duration, keepAlive: Duration
    ) async throws {
        let (outputs, sink) = (subscription.outputs, subscription.sink)
        try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                while true {
                    try await Task.sleep(for: keepAlive)
                    sink.yield(.keepAlive)
                }
            }
            group.addTask {
                try await Task.sleep(for: lifetime)
                // What is buffered still goes out, then the loop below ends.
                sink.finish()
            }
            defer { group.cancelAll() }
            try await withGracefulShutdownHandler {
                for await output in outputs {
                    switch output {
                    case .event(let event): try await writer.write(ByteBuffer(bytes: event.serverSentEvent))
                    case .keepAlive: try await writer.write(ByteBuffer(bytes: LiveEvent.keepAlive))
                    }
                }
            } onGracefulShutdown: {
                sink.finish()
            }
        }
    }

    /// The first event of `outputs` past revision `since`, or nil after `longest`, when the
    /// events end or when a graceful shutdown begins.
    static func first(_ outputs: AsyncStream<Output>, after since: Int64, within longest: Duration) async -> LiveEvent? {
        await withTaskGroup(of: LiveEvent?.self) { group in
            group.addTask {
                for await output in outputs {
                    guard case .event(let event) = output else { continue }
                    if event.revision > since { return event }
                }
                return nil
            }
            group.addTask {
                try? await Task.sleep(for: longest)
                return nil
            }
            group.addTask {
                try? await gracefulShutdown()
                return nil
            }
            defer { group.cancelAll() }
            return await group.next() ?? nil
        }
    }
}

extension SyncResponder {
    struct QueryProblem: Error { var text: String }

    /// `subscriptions=` of a live request: the roots the device subscribes to, in the text of
    /// its store's holdings (`project=3,42;archive=7`, Specs/live.md); nil without it.
    static func subscriptions(_ request: Request) -> Result<ScopeHoldings?, QueryProblem> {
        guard let text = request.uri.queryParameters["subscriptions"].map(String.init), !text.isEmpty else { return .success(nil) }
        guard let roots = ScopeHoldings(storedText: text) else {
            return .failure(QueryProblem(text: "'subscriptions' must list root ids by scope, as in project=3,42;archive=7"))
        }
        var count = 0
        for set in roots.scopes.values {
            guard case .some(let ids) = set else {
                return .failure(QueryProblem(text: "'subscriptions' names root ids, never every root (*)"))
            }
            count += ids.count
        }
        guard count <= 1_000 else { return .failure(QueryProblem(text: "'subscriptions' names \(count) roots; at most 1000")) }
        return .success(roots)
    }
}
