import FieldMergeProtocol
import FieldMergeSQLite

/// Why ``SyncClient/sync(maxRounds:progress:)`` stopped before it finished.
///
/// Every round that completed before the failure stays applied (``completed`` counts them);
/// the failed round changed nothing in the store. ``isRetryable`` says whether calling
/// `sync` again later, unchanged, can succeed: a network failure can, a request the server
/// refuses as it stands cannot until something changes (the app's code, the schema, the
/// batch size).
public struct SyncError: Error, Sendable, CustomStringConvertible {
    public enum Code: String, Sendable, CaseIterable {
        /// The transport failed: the server was unreachable, timed out, or failed itself
        /// (`TransportError`). Retry later.
        case unreachable
        /// The server refused the request as it stands (`SyncRequestRejected`): a schema or
        /// protocol version it does not share, a body over its limits, a malformed request.
        case rejected
        /// The server's answer could not be read, or does not answer what was sent (damaged
        /// on the way, or a server bug). Nothing of it was applied.
        case invalidResponse
        /// The local store failed (`StoreError`): busy, full, damaged.
        case store
        /// The sync was cancelled; the rounds that completed stay applied.
        case cancelled
        /// A round was aborted by other code (a fault-injection hook).
        case aborted
    }

    public var code: Code
    public var message: String
    /// Whether the same `sync()` may succeed later without any change on this side.
    public var isRetryable: Bool
    /// The error that caused this one: a `TransportError`, `SyncRequestRejected`,
    /// `WireError`, `StoreError`, `CancellationError`, or the hook's.
    public var cause: (any Error)?
    /// What the sync did before it failed.
    public var completed: SyncSummary

    public init(
        _ code: Code, _ message: String, isRetryable: Bool, cause: (any Error)? = nil,
        completed: SyncSummary = SyncSummary()
    ) {
        self.code = code
        self.message = message
        self.isRetryable = isRetryable
        self.cause = cause
        self.completed = completed
    }

    /// Classifies an error a round threw.
    init(classifying error: any Error, completed: SyncSummary) {
        switch error {
        case let error as SyncError:
            self = error
            self.completed = completed
        case let error as TransportError:
            self.init(.unreachable, error.message, isRetryable: true, cause: error, completed: completed)
        case let error as SyncRequestRejected:
            self.init(.rejected, error.description, isRetryable: false, cause: error, completed: completed)
        case let error as WireError:
            self.init(.invalidResponse, "the server's answer cannot be read: \(error)", isRetryable: true, cause: error,
                      completed: completed)
        case let error as StoreError:
            self.init(.store, error.description, isRetryable: error.isBusy, cause: error, completed: completed)
        case let error as CancellationError:
            self.init(.cancelled, "the sync was cancelled", isRetryable: true, cause: error, completed: completed)
        default:
            self.init(.aborted, "\(error)", isRetryable: true, cause: error, completed: completed)
        }
    }

    public var description: String {
        "sync \(code.rawValue)\(isRetryable ? " (retryable)" : ""): \(message)"
    }
}

extension Error {
    /// Whether trying the same work again later, unchanged, may succeed, so that a `catch`
    /// mixing a sync with other calls (where `error` is `any Error`) reads it directly, as
    /// in `catch where error.isRetryable`: a ``SyncError``'s own ``SyncError/isRetryable``;
    /// the errors a sync wraps (a `TransportError`, a `StoreError`, a `WireError`, a
    /// `SyncRequestRejected`, a `CancellationError`) as ``SyncError`` classifies them; any
    /// other error (the app's own) false.
    public var isRetryable: Bool {
        switch self {
        case let error as SyncError: return error.isRetryable
        case is TransportError, is SyncRequestRejected, is WireError, is StoreError, is CancellationError:
            return SyncError(classifying: self, completed: SyncSummary()).isRetryable
        default: return false
        }
    }
}
