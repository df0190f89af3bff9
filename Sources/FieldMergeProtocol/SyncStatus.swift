import FieldMerge

/// The sync endpoint's error contract (Specs/http.md §9): the status of every failure, and
/// what a client makes of it. The server's exchange (`SyncExchange`), the HTTP endpoint,
/// `HTTPTransport` and the in-process transports all follow this one table.
///
/// A failed exchange changed nothing on the server. Its status says whether sending the same
/// request again may work (5xx, 408, 429: the client throws a ``TransportError`` and retries
/// later) or would be refused again (any other 4xx: a ``SyncRequestRejected``).
public enum SyncStatus {
    /// A request answered.
    public static let ok = 200

    /// The error code of a 409 to a device behind the data set's compaction horizon: deletes
    /// it has not seen were compacted, so it must download the data set again (a client
    /// keeps its unsynced changes while it does: Specs/protocol.md, "Compaction").
    public static let resetRequired = "resetRequired"

    /// Whether a failed exchange may be sent again unchanged: 5xx, 408 and 429.
    public static func isRetryable(_ status: Int) -> Bool {
        status == 408 || status == 429 || status >= 500
    }

    /// What a client throws for a failed exchange with `status` and the server's error
    /// body, `origin` naming the server in messages: a ``TransportError`` when
    /// ``isRetryable(_:)``, else a ``SyncRequestRejected`` with the server's code.
    public static func clientError(status: Int, detail: WireErrorBody?, origin: String) -> any Error {
        if isRetryable(status) {
            let code = detail.map { " \($0.error)" } ?? ""
            let message = detail.map { ": \($0.message)" } ?? ""
            return TransportError("HTTP \(status)\(code) from \(origin)\(message)")
        }
        return SyncRequestRejected(
            status: status, code: detail?.error ?? "http\(status)",
            message: detail?.message ?? "HTTP \(status) from \(origin)", schema: detail?.schema)
    }

    /// ``clientError(status:detail:origin:)`` for an error body as it arrived (gzip'd or
    /// not, possibly not an error body at all).
    public static func clientError(status: Int, body: [UInt8], origin: String) -> any Error {
        clientError(status: status, detail: WireErrorBody(decoding: body), origin: origin)
    }
}

extension WireError {
    /// The status a server answers this error of a request body with: 413 past a size
    /// limit, 409 for a schema the server does not share, 400 otherwise.
    public var status: Int {
        switch code {
        case .tooLarge, .gzipTooLarge: 413
        case .incompatibleSchema: 409
        default: 400
        }
    }
}

extension WireErrorBody {
    /// `{"error": …, "message": …}`, as every error response carries it (never gzip'd).
    public var json: [UInt8] { errorCodec.encode(self) }

    /// The error body in `bytes` (gzip'd or not), or nil when they hold none.
    public init?(decoding bytes: [UInt8]) {
        guard !bytes.isEmpty, let json = try? Gzip.decompressIfGzip(bytes, limit: 1 << 20),
            let body = try? errorCodec.decodeError(json)
        else { return nil }
        self = body
    }
}

/// Error bodies name no entity, so a codec of the empty schema reads and writes them.
private let errorCodec: WireCodec = {
    do { return WireCodec(schema: try Schema([])) } catch { preconditionFailure("the empty schema is valid: \(error)") }
}()
