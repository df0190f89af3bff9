import FieldMergeProtocol

/// Why the server could not answer a request, or could not open its storage. The server
/// has then changed nothing.
public struct ServerError: Error, Sendable, CustomStringConvertible {
    public enum Code: String, Sendable {
        /// The request cannot be processed as it stands (an unknown entity, a created id that
        /// is not a temporary one, a create without attributes): HTTP 400.
        case badRequest
        /// The client speaks a protocol version this server does not: HTTP 400.
        case unsupportedProtocolVersion
        /// The request reuses the `clientID` and `requestID` of an earlier request the server
        /// took, with other change sets: HTTP 422. The earlier one's answer is not replayed and
        /// nothing is applied (Specs/protocol.md §2).
        case idempotencyMismatch
        /// The request says the device has seen a revision beyond the data set's: the data set
        /// was restored from a backup or replaced since. Catch-up after that revision would
        /// skip every change numbered below it, so the device must reset its replica: HTTP 409.
        case revisionAhead
        /// The request's `maxRevision` is behind the data set's compaction horizon: deletes
        /// this device has not seen were compacted away, so catch-up cannot tell it of them.
        /// The client downloads the data set again and keeps its unsynced changes (``ServerState/horizon``): HTTP 409.
        case resetRequired
        /// The request names no data set the sender may reach (no tenant, or not a valid
        /// one): HTTP 403.
        case forbidden
        /// The storage was made for another schema (opening it): HTTP 500.
        case schemaMismatch
        /// The storage holds data this server cannot read back (damaged): HTTP 500.
        case corrupt
        /// The storage failed (busy, full, unreachable); ``cause`` has its error. HTTP 500.
        case storage
        /// The server cannot take the request now, though nothing is wrong with it or the
        /// storage: every data set it may keep open is in use by other requests
        /// (``TenantDirectory/Limits/maxOpen``). HTTP 503, retryable.
        case unavailable
    }

    public var code: Code
    public var message: String
    /// The storage's own error, for ``Code/storage`` and ``Code/corrupt``.
    public var cause: (any Error)?

    public init(_ code: Code, _ message: String, cause: (any Error)? = nil) {
        self.code = code
        self.message = message
        self.cause = cause
    }

    /// Whether the client may send the same request again later: the storage failed or
    /// holds what this server cannot read, not the request (``SyncStatus/isRetryable(_:)``
    /// of ``status``).
    public var isRetryable: Bool { SyncStatus.isRetryable(status) }

    public var description: String { "\(code.rawValue): \(message)" }

    /// `error` as a server error: itself, or a storage failure that keeps it.
    static func wrapping(_ error: any Error) -> ServerError {
        if let error = error as? ServerError { return error }
        return ServerError(.storage, "\(error)", cause: error)
    }

    /// The status every transport answers this error with (Specs/http.md §1): 400 for a
    /// request refused as it stands, 403 for one that reaches no data set, 409 for a device
    /// ahead of the data set (restored from a backup since) or behind its compaction horizon, 422 for a request
    /// id reused with another body, 500 when the storage failed or cannot be read, 503 when
    /// the server is busy (both retryable: the request was fine).
    public var status: Int {
        switch code {
        case .badRequest, .unsupportedProtocolVersion: 400
        case .forbidden: 403
        case .revisionAhead, .resetRequired: 409
        case .idempotencyMismatch: 422
        case .storage, .corrupt, .schemaMismatch: 500
        case .unavailable: 503
        }
    }

    /// The error body of an answer with ``status``.
    public var body: WireErrorBody { WireErrorBody(error: code.rawValue, message: message) }
}
