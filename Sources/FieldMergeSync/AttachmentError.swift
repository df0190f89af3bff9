import FieldMerge
import FieldMergeProtocol
import FieldMergeSQLite
import FieldMergeFiles

/// Why an attachment could not be opened (``SyncClient/attachment(_:entity:)``), or why its
/// upload or eager download failed (``AttachmentFailure``).
public struct AttachmentError: Error, Sendable, CustomStringConvertible {
    public enum Code: String, Sendable, CaseIterable {
        /// Not in the cache, and its entity's policy is ``AttachmentDownloadPolicy/never``.
        case notCached
        /// The client's transport does not carry attachments (it is no `AttachmentTransport`).
        case unsupported
        /// No record this device's identity may read references it (HTTP 403).
        case forbidden
        /// The server does not hold all its bytes yet (HTTP 404): the device that attached
        /// it has not uploaded it. Retry later.
        case notFound
        /// The bytes do not have the reference's hash or size: a download damaged on the
        /// way (not kept), or an upload of a cached file that is damaged (HTTP 422).
        case corrupt
        /// The server refused it as it stands (another status: 413 too large, 409 …).
        case rejected
        /// The network or the server failed (`TransportError`). Retry later.
        case unreachable
        /// The store failed, or a file of the cache could not be read or written.
        case store
        /// The call was cancelled.
        case cancelled
    }

    public var code: Code
    public var message: String
    /// Whether trying again later, unchanged, may succeed.
    public var isRetryable: Bool
    /// The error that caused it: a `TransportError`, `SyncRequestRejected`, `StoreError`.
    public var cause: (any Error)?

    public init(_ code: Code, _ message: String, isRetryable: Bool, cause: (any Error)? = nil) {
        self.code = code
        self.message = message
        self.isRetryable = isRetryable
        self.cause = cause
    }

    /// Classifies what a transfer threw.
    init(classifying error: any Error) {
        switch error {
        case let error as AttachmentError: self = error
        case let error as TransportError: self.init(.unreachable, error.message, isRetryable: true, cause: error)
        case let error as SyncRequestRejected:
            switch (error.status, error.code) {
            case (403, _): self.init(.forbidden, error.message, isRetryable: false, cause: error)
            case (404, _): self.init(.notFound, error.message, isRetryable: true, cause: error)
            case (_, "hashMismatch"): self.init(.corrupt, error.message, isRetryable: false, cause: error)
            default: self.init(.rejected, error.description, isRetryable: false, cause: error)
            }
        case let error as StoreError: self.init(.store, error.description, isRetryable: error.isBusy, cause: error)
        case let error as AttachmentFileError: self.init(.store, error.description, isRetryable: false, cause: error)
        case let error as CancellationError: self.init(.cancelled, "cancelled", isRetryable: true, cause: error)
        default: self.init(.unreachable, "\(error)", isRetryable: true, cause: error)
        }
    }

    public var description: String { "attachment \(code.rawValue)\(isRetryable ? " (retryable)" : ""): \(message)" }
}

/// An upload the server refused, or an eager download that failed, during a sync
/// (``SyncSummary/attachmentFailures``).
public struct AttachmentFailure: Sendable, Equatable, CustomStringConvertible {
    public var reference: AttachmentReference
    public var direction: AttachmentProgress.Direction
    public var code: AttachmentError.Code
    public var message: String
    /// For an upload: the refusals counted so far, and whether the client stopped trying
    /// (`Store.retryAttachmentUploads()` makes it try again).
    public var attempts: Int
    public var givenUp: Bool

    public var description: String {
        "\(direction.rawValue) of \(reference.sha256.prefix(12))…: \(code.rawValue): \(message)"
            + (direction == .upload ? " (attempt \(attempts)\(givenUp ? ", given up" : ""))" : "")
    }
}

/// The bytes of one attachment moving.
public struct AttachmentProgress: Sendable, Equatable {
    public enum Direction: String, Sendable {
        case upload, download
    }

    public var sha256: String
    public var direction: Direction
    /// The bytes the server holds (upload) or the device has written (download) so far.
    public var bytes: Int64
    /// The attachment's size.
    public var total: Int64
}

/// When a device downloads the attachments of an entity's records
/// (``SyncClient/setDownloadPolicy(_:for:)``).
public enum AttachmentDownloadPolicy: String, Sendable, CaseIterable {
    /// After each sync, every attachment the entity's records reference that the cache does
    /// not hold, one at a time.
    case eager
    /// When the app opens it (``SyncClient/attachment(_:entity:)``). The default.
    case onAccess
    /// Never: opening one that is not cached fails with ``AttachmentError/Code/notCached``
    /// (what the device attached itself stays cached until evicted).
    case never
}
