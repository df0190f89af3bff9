import FieldMerge
import FieldMergeProtocol

extension SyncClient {
    /// One request and its decoded answer, with the bytes each way.
    struct Exchange: Sendable {
        var response: SyncResponse
        var bytesSent: Int
        var bytesReceived: Int
    }

    /// The next catch-up page, asked for while the current one is applied.
    ///
    /// A catch-up request changes nothing on the server, so while the client applies page
    /// *k* (its store's work) the request for page *k + 1* is already out and its answer
    /// being decoded (the server's and the codec's work), on another thread. The page is
    /// used only if the store then stands at the revision it was asked from and nothing is
    /// pending; otherwise it is dropped unread.
    struct Prefetch {
        var maxRevision: Int64
        var task: Task<Exchange, any Error>
    }

    /// Encodes the request, gzips it if asked, sends it, and decodes the answer (gzip'd or not).
    nonisolated static func exchange(
        _ request: SyncRequest, codec: WireCodec, transport: any SyncTransport, gzip: Bool, probe: (any SyncProbe)?
    ) async throws -> Exchange {
        let json = probe.measure(.encode) { codec.encode(request) }
        let wire = gzip ? probe.measure(.gzip) { Gzip.compress(json, level: Gzip.defaultLevel) } : json
        return try await exchange(wire: wire, codec: codec, transport: transport, gzip: gzip, probe: probe)
    }

    /// Sends bytes as they go on the wire (gzip'd when `gzip`) and decodes the answer.
    nonisolated static func exchange(
        wire body: [UInt8], codec: WireCodec, transport: any SyncTransport, gzip: Bool, probe: (any SyncProbe)?
    ) async throws -> Exchange {
        let answer = try await transport.send(body, gzip: gzip)
        let response = try probe.measure(.clientDecode) { () throws(WireError) in
            try codec.decodeResponse(try Gzip.decompressIfGzip(answer, limit: WireLimits().maxDecompressedBytes))
        }
        return Exchange(response: response, bytesSent: body.count, bytesReceived: answer.count)
    }

    /// Starts fetching the catch-up page after `revision`, off this actor.
    func prefetch(after revision: Int64) -> Prefetch {
        let request = SyncRequest(
            maxRevision: revision, changeSets: [], clientID: clientID, requestID: nil, limit: batchSize,
            protocolVersion: WireProtocol.version,
            schemaVersion: schemaVersion, schemaFingerprint: schemaFingerprint)
        let (codec, transport, gzip, probe) = (self.codec, self.transport, self.gzip, self.probe)
        return Prefetch(
            maxRevision: revision,
            task: Task.detached { try await Self.exchange(request, codec: codec, transport: transport, gzip: gzip, probe: probe) })
    }
}
