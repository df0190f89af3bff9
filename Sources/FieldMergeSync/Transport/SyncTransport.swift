import FieldMerge

/// Carries one encoded request to the server and brings back the encoded response.
///
/// Implementations: ``InProcessTransport`` (a ``RevisionServer`` in this process) and the
/// HTTP transport. A transport may fail; the client then keeps its store as it was and the
/// next ``SyncClient/sync(progress:)`` retries. Requests carry a client id and a request id,
/// so a retried request whose response was lost can be recognised by the server.
public protocol SyncTransport: Sendable {
    /// Sends `body` (JSON, gzip'd when `gzip`) and returns the response body (JSON, or gzip
    /// when the server answered so: the client detects gzip by its magic bytes).
    func send(_ body: [UInt8], gzip: Bool) async throws -> [UInt8]
}

/// A transport failure the client may retry safely.
public struct TransportError: Error, Equatable, Sendable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { "transport: \(message)" }
}

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
