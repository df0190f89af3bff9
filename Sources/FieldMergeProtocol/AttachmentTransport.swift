/// A transport that also carries the bytes of attachments (Specs/attachments.md §4 and
/// "The device"): what the server holds of a hash, resumable uploads from a file, and
/// downloads into a file. `InProcessTransport` and `HTTPTransport` implement it; a
/// `SyncClient` over a transport that does not uploads nothing, and the server refuses
/// records that reference bytes it lacks (`attachmentMissing`).
///
/// Errors are those of ``SyncTransport``: a ``TransportError`` may succeed later (the
/// network, a 5xx); a ``SyncRequestRejected`` carries the server's status and code:
///
/// | status | code | meaning |
/// |---|---|---|
/// | 403 | `forbidden` | no record the caller may read references the attachment |
/// | 404 | `notFound` | the bytes are not uploaded (or not all of them) |
/// | 409 | `offsetMismatch`, `uploadBusy`, `sizeMismatch` | another upload is under way, or the held bytes differ |
/// | 413 | `tooLarge` | the attachment is larger than the server takes |
/// | 422 | `hashMismatch` | the bytes sent do not have the hash: they were discarded |
///
/// Files are read and written in chunks; no call holds a whole attachment in memory.
public protocol AttachmentTransport: Sendable {
    /// What the server holds of `sha256`.
    func attachmentHeld(_ sha256: String) async throws -> AttachmentHolding

    /// Sends the bytes of the file at `path` from `offset` (what the server holds) to its
    /// end, as the attachment `sha256` of `size` bytes; `progress` hears the bytes the
    /// server holds as they grow.
    /// - Returns: What the server holds afterwards (complete once every byte arrived and
    ///   the hash matched).
    func uploadAttachment(
        _ sha256: String, size: Int64, from path: String, offset: Int64, progress: (@Sendable (Int64) -> Void)?
    ) async throws -> AttachmentHolding

    /// Appends the bytes `range` (all of them when nil) of the finished attachment
    /// `sha256` to the file at `path`, created when missing; `progress` hears the bytes
    /// written so far. The caller checks the hash.
    func downloadAttachment(
        _ sha256: String, range: Range<Int64>?, to path: String, progress: (@Sendable (Int64) -> Void)?
    ) async throws

    /// ``downloadAttachment(_:range:to:progress:)``, also handing `received` every piece
    /// of the body in order as it goes into the file (perhaps while it is being written),
    /// so that the caller hashes the bytes where they already are instead of reading the
    /// file back. The bytes are valid during the call only. What `received` saw counts only
    /// as far as `progress` reported and the call returned: a call that throws may have
    /// handed on bytes the file never got.
    ///
    /// The default hands on nothing; the caller then reads the file back.
    func downloadAttachment(
        _ sha256: String, range: Range<Int64>?, to path: String, progress: (@Sendable (Int64) -> Void)?,
        received: @escaping @Sendable (UnsafeRawBufferPointer) -> Void
    ) async throws
}

extension AttachmentTransport {
    public func downloadAttachment(
        _ sha256: String, range: Range<Int64>?, to path: String, progress: (@Sendable (Int64) -> Void)?,
        received: @escaping @Sendable (UnsafeRawBufferPointer) -> Void
    ) async throws {
        try await downloadAttachment(sha256, range: range, to: path, progress: progress)
    }
}

/// What a server holds of one attachment.
public enum AttachmentHolding: Sendable, Equatable {
    /// Nothing.
    case absent
    /// Some bytes of an upload that has not finished.
    case partial(bytes: Int64)
    /// Every byte, checked against the hash.
    case complete(size: Int64)
}
