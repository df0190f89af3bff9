import FieldMergeProtocol
import Hummingbird

extension Response {
    /// The endpoint's error response: `{"error": <code>, "message": …}`, JSON, never gzip'd
    /// (also for middleware in front of the routes, such as authentication).
    package static func syncError(_ status: HTTPResponse.Status, _ body: WireErrorBody) -> Response {
        Response(status: status, headers: [.contentType: "application/json"], body: .init(byteBuffer: ByteBuffer(bytes: body.json)))
    }
}
