import FieldMerge
import FieldMergeProtocol

/// A ``RevisionServer`` in this process, behind the same bytes a network would carry.
public actor InProcessTransport: SyncTransport {
    private let server: RevisionServer
    private let codec: WireCodec
    /// Requests answered so far.
    public private(set) var requests = 0

    public init(server: sending RevisionServer) {
        self.server = server
        codec = WireCodec(schema: server.schema)
    }

    public func send(_ body: [UInt8], gzip: Bool) async throws -> [UInt8] {
        requests += 1
        let json = gzip ? try Gzip.decompress(body, limit: WireLimits().maxDecompressedBytes) : body
        let request = try codec.decodeRequest(json)
        let response = try server.handle(request)
        let encoded = codec.encode(response)
        return gzip ? Gzip.compress(encoded) : encoded
    }

    /// Runs `body` with the server (for tests and tools that inspect it).
    public func withServer<T: Sendable>(_ body: (RevisionServer) throws -> T) rethrows -> T { try body(server) }
}
