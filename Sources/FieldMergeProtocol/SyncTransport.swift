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
