import FieldMerge
import FieldMergeProtocol
import Hummingbird

extension Response {
    /// The endpoint's error response: `{"error": <code>, "message": …}`, JSON, never gzip'd
    /// (also for middleware in front of the routes, such as authentication).
    package static func syncError(_ status: HTTPResponse.Status, _ body: WireErrorBody) -> Response {
        Response(
            status: status, headers: [.contentType: "application/json"],
            body: .init(byteBuffer: ByteBuffer(bytes: errorCodec.encode(body))))
    }
}

/// Error bodies name no entity, so a codec of the empty schema writes them.
private let errorCodec: WireCodec = {
    do { return WireCodec(schema: try Schema([])) } catch { preconditionFailure("the empty schema is valid: \(error)") }
}()
