import FieldMergeProtocol
import Hummingbird
import NIOCore

extension SyncResponder {
    /// `GET /metrics`: the metrics' text, for the bearer token of
    /// ``SyncMetrics/Access/token(_:)``, else (``SyncMetrics/Access/loopback``) for clients
    /// on a loopback address only; 404 when the endpoint has no metrics.
    func metrics<Context: SyncRequestContext>(_ request: Request, context: Context) -> Response {
        guard let metrics = configuration.metrics else { return notFound(request) }
        switch metrics.access {
        case .token(let token):
            guard Self.bearer(request.headers[.authorization]).map({ Self.same($0, token) }) == true else {
                var response = errorResponse(
                    .unauthorized, WireErrorBody(error: "unauthenticated", message: "GET /metrics needs the metrics bearer token"))
                response.headers[.wwwAuthenticate] = "Bearer"
                return response
            }
        case .loopback:
            let peer = (context as? any RemoteAddressRequestContext)?.remoteAddress
            guard let peer, Self.isLoopback(peer) else {
                return errorResponse(
                    .forbidden,
                    WireErrorBody(error: "forbidden", message: "GET /metrics without a metrics token answers loopback clients only"))
            }
        }
        return Response(
            status: .ok, headers: [.contentType: metrics.contentType, .cacheControl: "no-store"],
            body: .init(byteBuffer: ByteBuffer(bytes: metrics.render())))
    }

    /// The token of `Authorization: Bearer <token>`.
    static func bearer(_ header: String?) -> String? {
        guard let header, header.count > 7, header.prefix(7).lowercased() == "bearer " else { return nil }
        return String(header.dropFirst(7))
    }

    /// Whether `a` equals `b`, in a time that does not depend on where they differ.
    static func same(_ a: String, _ b: String) -> Bool {
        let x = Array(a.utf8), y = Array(b.utf8)
        var difference = UInt8(truncatingIfNeeded: x.count ^ y.count)
        for index in 0..<min(x.count, y.count) { difference |= x[index] ^ y[index] }
        return difference == 0 && x.count == y.count
    }

    static func isLoopback(_ address: SocketAddress) -> Bool {
        switch address {
        case .v4: return address.ipAddress?.hasPrefix("127.") == true
        case .v6: return address.ipAddress == "::1" || address.ipAddress?.hasPrefix("::ffff:127.") == true
        default: return false
        }
    }
}
