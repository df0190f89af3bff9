import FieldMerge
import FieldMergeProtocol

extension SyncClient {
    /// One request and its decoded answer, with the bytes each way.
    struct Exchange: Sendable {
        var response: SyncResponse
        var bytesSent: Int
        var bytesReceived: Int
        /// The request for the page after this one, sent as soon as this one's head arrived
        /// (only for a prefetched page): used if the response agrees with its head.
        var follower: Arrival.Pending?
        /// A prefetched catch-up page, being read in pieces for ``absorb`` to apply as they
        /// come (``response`` is then empty).
        var undecoded: PagePieces? = nil
    }

    /// A catch-up answer as it arrived, not yet decoded, and what its first bytes say.
    struct Arrival: Sendable {
        var answer: [UInt8]
        var bytesSent: Int
        var head: ResponseHead?

        /// The request for a page, on its way, and the revision and holdings it asks from.
        struct Pending: Sendable {
            var maxRevision: Int64
            var scopes: ScopeHoldings? = nil
            /// The template it was asked with (its roots subscribed to and wanted first).
            var asked: SyncRequest? = nil
            var task: Task<Arrival, any Error>
        }
    }

    /// The next catch-up page, asked for while the current one is applied.
    ///
    /// A catch-up request changes nothing on the server, so while the client applies page
    /// *k* (its store's work) the request for page *k + 1* is already out, and once its
    /// answer has arrived it is inflated and read in pieces on another thread
    /// (``PagePieces``), a few pieces ahead of the client. As soon as that answer's head
    /// says where it ends (`ResponseHead`), the request for page *k + 2* goes out, so the
    /// server's work on it overlaps the reading of *k + 1* and the applying of *k*. No
    /// more than that: page *k + 3* is asked for only once *k + 1* is being applied, so at
    /// most one answer arriving and one being read wait beside the one being applied.
    /// Still one request in flight at a time: the next goes out only after the previous
    /// answer arrived.
    ///
    /// A page is used only if the store then stands at the revision and the scope holdings
    /// it was asked with and nothing is pending; otherwise it is dropped unread. (A page may
    /// change the holdings, and the request for the page after it goes out on its head,
    /// before the new holdings are known: with the old ones, and dropped if they changed.)
    struct Prefetch: Sendable {
        var maxRevision: Int64
        var scopes: ScopeHoldings?
        /// The roots it asks for (`SyncRequest/subscriptions`, `SyncRequest/priority`).
        var subscriptions: ScopeHoldings?
        var priority: ScopeHoldings?
        /// The compaction horizon it is asked under (`SyncRequest/horizon`).
        var horizon: Int64?
        var task: Task<Exchange, any Error>

        /// Drops the page, and the request for the one after it if it went out.
        func cancel() {
            task.cancel()
            let task = task
            Task.detached { (try? await task.value)?.follower?.task.cancel() }
        }
    }

    /// Encodes the request, gzips it if asked, sends it, and decodes the answer (gzip'd or not).
    nonisolated static func exchange(
        _ request: SyncRequest, codec: WireCodec, transport: any SyncTransport, gzip: Bool, probe: (any SyncProbe)?
    ) async throws -> Exchange {
        try await exchange(wire: wire(request, codec: codec, gzip: gzip, probe: probe), codec: codec, transport: transport, gzip: gzip, probe: probe)
    }

    /// A request as it goes on the wire: encoded, and gzip'd when `gzip`.
    nonisolated static func wire(_ request: SyncRequest, codec: WireCodec, gzip: Bool, probe: (any SyncProbe)?) -> [UInt8] {
        let json = probe.measure(.encode) { codec.encode(request) }
        return gzip ? probe.measure(.gzip) { Gzip.compress(json, level: Gzip.defaultLevel) } : json
    }

    /// Sends bytes as they go on the wire (gzip'd when `gzip`) and decodes the answer.
    nonisolated static func exchange(
        wire body: [UInt8], codec: WireCodec, transport: any SyncTransport, gzip: Bool, probe: (any SyncProbe)?
    ) async throws -> Exchange {
        let answer = try await transport.send(body, gzip: gzip)
        return Exchange(response: try decode(answer, codec: codec, probe: probe), bytesSent: body.count, bytesReceived: answer.count)
    }

    /// An answer decoded (inflated first when it is gzip).
    nonisolated static func decode(_ answer: [UInt8], codec: WireCodec, probe: (any SyncProbe)?) throws(WireError) -> SyncResponse {
        try probe.measure(.clientDecode) { () throws(WireError) in
            try codec.decodeResponse(try Gzip.decompressIfGzip(answer, limit: WireLimits().maxDecompressedBytes))
        }
    }

    /// A catch-up page as ``prefetch(after:holding:asking:follower:)`` hands it on:
    /// inflated, and being read in pieces of `size` records (``PagePieces``) for
    /// ``absorb`` to apply as they come. The answer's head has already asked for the page
    /// after it.
    nonisolated static func undecoded(
        _ arrived: Arrival, codec: WireCodec, size: Int, follower: Arrival.Pending?, probe: (any SyncProbe)?
    ) throws(WireError) -> Exchange {
        let body = try probe.measure(.clientDecode) { () throws(WireError) in
            try Gzip.decompressIfGzip(arrived.answer, limit: WireLimits().maxDecompressedBytes)
        }
        return Exchange(
            response: SyncResponse(maxRevision: 0, changeSets: []), bytesSent: arrived.bytesSent,
            bytesReceived: arrived.answer.count, follower: follower,
            undecoded: PagePieces(body, codec: codec, size: size, probe: probe))
    }

    /// Starts fetching the catch-up page after `revision` for a device holding `scopes`, off
    /// this actor, or takes the request for it that is already on its way (`follower`, asked
    /// for on the current page's head). A follower asked from another revision or with other
    /// holdings is dropped.
    /// It asks for the roots `request` asked for.
    func prefetch(
        after revision: Int64, holding scopes: ScopeHoldings? = nil, asking request: SyncRequest? = nil, follower: Arrival.Pending?
    ) -> Prefetch {
        let pages = PageRequester(
            template: SyncRequest(
                maxRevision: revision, changeSets: [], clientID: clientID, requestID: nil, limit: batchSize,
                protocolVersion: WireProtocol.version, schemaVersion: schemaVersion, schemaFingerprint: schemaFingerprint,
                scopes: scopes, subscriptions: request?.subscriptions, priority: request?.priority, horizon: request?.horizon),
            codec: codec, transport: transport, gzip: gzip, probe: probe)
        let size = pieceRecords
        let arrival: Task<Arrival, any Error>
        if let follower, follower.maxRevision == revision, follower.scopes == scopes,
            follower.asked?.subscriptions == request?.subscriptions, follower.asked?.priority == request?.priority,
            follower.asked?.horizon == request?.horizon
        {
            arrival = follower.task
        } else {
            follower?.task.cancel()
            arrival = pages.fetch(after: revision)
        }
        return Prefetch(
            maxRevision: revision, scopes: scopes, subscriptions: request?.subscriptions, priority: request?.priority,
            horizon: request?.horizon, task: Task.detached {
            let arrived = try await withTaskCancellationHandler { try await arrival.value } onCancel: { arrival.cancel() }
            // Ask for the page after this one before decoding it: the head says where it ends.
            var next: Arrival.Pending?
            if let head = arrived.head, head.hasMore, !Task.isCancelled {
                next = Arrival.Pending(
                    maxRevision: head.maxRevision, scopes: scopes, asked: pages.template, task: pages.fetch(after: head.maxRevision))
            }
            do {
                return try Self.undecoded(arrived, codec: pages.codec, size: size, follower: next, probe: pages.probe)
            } catch {
                next?.task.cancel()
                throw error
            }
        })
    }

    /// Sends catch-up requests, off the client's actor.
    struct PageRequester: Sendable {
        /// The request, but for its `maxRevision` (its `scopes` are the holdings it asks with).
        var template: SyncRequest
        var codec: WireCodec
        var transport: any SyncTransport
        var gzip: Bool
        var probe: (any SyncProbe)?

        /// Sends the request for the page after `revision`; the answer is read only as far
        /// as its head.
        func fetch(after revision: Int64) -> Task<Arrival, any Error> {
            var request = template
            request.maxRevision = revision
            return Task.detached { [self] in
                let wire = SyncClient.wire(request, codec: codec, gzip: gzip, probe: probe)
                let answer = try await transport.send(wire, gzip: gzip)
                return Arrival(answer: answer, bytesSent: wire.count, head: ResponseHead(body: answer))
            }
        }
    }
}
