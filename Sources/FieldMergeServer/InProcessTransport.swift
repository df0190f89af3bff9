import FieldMerge
import FieldMergeProtocol
import Synchronization

/// A ``RevisionServer`` in this process, behind the same bytes a network would carry.
///
/// Errors reach the client as they would over HTTP: a body the codec refuses or a request
/// the server refuses as a whole is a ``SyncRequestRejected``; a failing storage is a
/// ``TransportError`` (try again later).
public final class InProcessTransport: SyncTransport {
    public let server: RevisionServer
    private let codec: WireCodec
    /// The identity every request is sent under (what a token would say over HTTP).
    public let identity: SyncIdentity?
    /// Hears the time of decoding requests and encoding answers (``SyncPhase``); the server's
    /// own phases go to its ``RevisionServer/Options/probe``.
    public let probe: (any SyncProbe)?
    private let answered = Mutex(0)
    /// Requests received so far.
    public var requests: Int { answered.withLock { $0 } }

    public init(server: RevisionServer, identity: SyncIdentity? = nil, probe: (any SyncProbe)? = nil) {
        self.server = server
        self.identity = identity
        self.probe = probe
        codec = server.wireCodec()
    }

    public func send(_ body: [UInt8], gzip: Bool) async throws -> [UInt8] {
        answered.withLock { $0 += 1 }
        let request: SyncRequest
        do { request = try probe.measure(.serverDecode) { () throws(WireError) in try decode(body, gzip: gzip) } } catch {
            throw Self.rejection(error)
        }
        let response: SyncResponse
        do {
            response = try await server.handle(request, identity: identity)
        } catch {
            throw error.clientError
        }
        let encoded = probe.measure(.responseEncode) { codec.codec(answering: request).encode(response) }
        return gzip ? probe.measure(.responseGzip) { Gzip.compress(encoded) } : encoded
    }

    private func decode(_ body: [UInt8], gzip: Bool) throws(WireError) -> SyncRequest {
        try codec.decodeRequest(gzip ? try Gzip.decompress(body, limit: WireLimits().maxDecompressedBytes) : body)
    }

    /// A body the codec refuses, as an HTTP server would answer it: 413 past a size limit,
    /// 409 for another schema, else 400.
    private static func rejection(_ error: WireError) -> SyncRequestRejected {
        let status = switch error.code {
        case .tooLarge, .gzipTooLarge: 413
        case .incompatibleSchema: 409
        default: 400
        }
        return SyncRequestRejected(status: status, code: error.code.rawValue, message: error.description)
    }

    /// Runs `body` with the server (for tests and tools that inspect it).
    public func withServer<T>(_ body: (RevisionServer) async throws -> T) async rethrows -> T { try await body(server) }
}
