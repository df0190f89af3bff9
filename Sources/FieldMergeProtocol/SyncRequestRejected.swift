/// The server refused a request as it stands (over HTTP: 400, 413 and other 4xx but 408 and
/// 429; in process: a request the server cannot process): sending it again unchanged would be
/// refused again, so it is not a ``TransportError``. Every transport reports it alike.
///
/// A 400 means the body could not be read or the server refused the request as a whole (a
/// bug, or a schema the server does not share); a 413 that it exceeds the server's size
/// limits (send fewer records per request: `SyncClient.batchSize`). Either way the server
/// changed nothing.
public struct SyncRequestRejected: Error, Equatable, Sendable, CustomStringConvertible {
    /// The HTTP status code.
    public var status: Int
    /// The server's `"error"` code (`malformedJSON`, `tooLarge`, `badRequest`, …), or
    /// `http<status>` when the body carried none.
    public var code: String
    /// The server's `"message"`, or a summary when the body carried none.
    public var message: String
    /// With a 409 for another schema, the server's schema outline (`"schema"` of the error
    /// body), one line per entity and field; nil otherwise.
    public var schema: [String]?

    public init(status: Int, code: String, message: String, schema: [String]? = nil) {
        self.status = status
        self.code = code
        self.message = message
        self.schema = schema
    }

    public var description: String { "HTTP \(status) \(code): \(message)" }
}
