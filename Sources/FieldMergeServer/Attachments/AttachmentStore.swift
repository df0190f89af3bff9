/// Where a server keeps the bytes of attachments, by their SHA-256 (Specs/attachments.md).
///
/// A hash is absent, partly uploaded (some bytes held, not readable), or finished (its
/// bytes match the hash and are readable). Uploads append at the end of what is held, so
/// an interrupted one continues where it stopped; ``AttachmentUpload/finish(size:)``
/// checks the hash and the size before the bytes become readable, at once. The same
/// hash uploaded twice is kept once.
///
/// The protocol does no I/O: `DirectoryAttachmentStore` (FieldMergeServerSQLite) keeps
/// files beside the SQLite file; another store (object storage, a database) implements
/// the same calls. Every call may suspend; none holds a whole file in memory.
public protocol AttachmentStore: Sendable {
    /// What the store holds of `sha256` (64 lowercase hexadecimal digits, checked by the
    /// caller).
    func held(_ sha256: String) async throws -> AttachmentHeld

    /// Opens the upload of `sha256` to append bytes at `offset`, which must be the number
    /// of bytes held (0 for a new one). One upload of a hash is open at a time.
    ///
    /// - Throws: ``AttachmentStoreError/offsetMismatch(held:)`` when `offset` is not what
    ///   is held; ``AttachmentStoreError/busy`` while another upload of the hash is open;
    ///   ``AttachmentStoreError/complete(size:)`` when the hash is finished already.
    func upload(_ sha256: String, at offset: Int64) async throws -> any AttachmentUpload

    /// The bytes `range` of the finished `sha256`, in chunks of a bounded size.
    ///
    /// - Throws: ``AttachmentStoreError/notFound`` when the hash is not finished.
    func read(_ sha256: String, range: Range<Int64>) async throws -> AsyncThrowingStream<[UInt8], any Error>
}

/// What an ``AttachmentStore`` holds of one hash.
public enum AttachmentHeld: Sendable, Equatable {
    /// Nothing.
    case absent
    /// `bytes` bytes of an upload that has not finished; not readable.
    case partial(bytes: Int64)
    /// Finished: `size` bytes whose SHA-256 is the hash, readable.
    case complete(size: Int64)
}

/// One open upload: bytes appended in order, then finished or closed (kept to resume).
public protocol AttachmentUpload: Sendable {
    /// How many bytes are held now, the ones appended included.
    var held: Int64 { get async }
    /// Appends `bytes` after what is held.
    func append(_ bytes: [UInt8]) async throws
    /// Checks that the bytes held are `size` bytes whose SHA-256 is the upload's hash, and
    /// makes them readable, at once. On a mismatch the bytes held are removed (a client
    /// starts again from 0) and nothing becomes readable. Closes the upload.
    ///
    /// - Throws: ``AttachmentStoreError/sizeMismatch(expected:held:)``,
    ///   ``AttachmentStoreError/hashMismatch(expected:actual:size:)``.
    func finish(size: Int64) async throws
    /// Closes the upload, keeping what is held so that a later upload continues after it.
    func close() async
}

/// Why an ``AttachmentStore`` refused a call.
public enum AttachmentStoreError: Error, Equatable, Sendable, CustomStringConvertible {
    /// An upload began at an offset other than the number of bytes held.
    case offsetMismatch(held: Int64)
    /// Another upload of the hash is open.
    case busy
    /// The hash is finished already.
    case complete(size: Int64)
    /// The hash is not finished (absent, or partly uploaded).
    case notFound
    /// `held` bytes were uploaded where the reference says `expected`. They were removed.
    case sizeMismatch(expected: Int64, held: Int64)
    /// The bytes held are not what the hash and size say: their SHA-256 is `actual`, their
    /// size `size`. They were removed.
    case hashMismatch(expected: String, actual: String, size: Int64)

    public var description: String {
        switch self {
        case .offsetMismatch(let held): "the upload must continue at byte \(held), which is what the server holds"
        case .busy: "another upload of this attachment is in progress"
        case .complete(let size): "the attachment is held already (\(size) bytes)"
        case .notFound: "no such attachment"
        case let .sizeMismatch(expected, held):
            "\(held) bytes were uploaded, but the attachment has \(expected): they were discarded"
        case let .hashMismatch(expected, actual, size):
            "the \(size) bytes uploaded have the SHA-256 \(actual), not \(expected): they were discarded"
        }
    }
}

/// What a store does for garbage collection (``RevisionServer/collectAttachments(unusedFor:dryRun:)``,
/// Specs/attachments.md §6). Times are the store's own clock, in seconds: "unchanged for
/// `s`" means not written, finished or kept in the last `s` seconds.
///
/// A store that does not implement these never collects: ``keep(_:)`` then only says whether
/// the hash is finished, and nothing is listed or removed.
public protocol CollectingAttachmentStore: AttachmentStore {
    /// Marks `sha256` as in use now, if it is finished, at once with the check.
    ///
    /// The server keeps each hash a request references just before the request's
    /// transaction, so a collection that found it unreferenced before then leaves it: its
    /// removal requires it unchanged for the grace period.
    /// - Returns: Whether the hash is finished (and now marked).
    func keep(_ sha256: String) async throws -> Bool

    /// The hashes beginning with `prefix` (two hexadecimal digits) that are held, finished or
    /// partial with no upload open, and unchanged for `seconds`.
    func unchanged(for seconds: Int64, prefix: String) async throws -> [AttachmentUnchanged]

    /// Removes the bytes of `sha256` (finished or partial) when they are still unchanged
    /// for `seconds` and no upload of them is open, as one step with the check.
    /// - Returns: Whether they were removed.
    func remove(_ sha256: String, ifUnchangedFor seconds: Int64) async throws -> Bool
}

/// A hash a ``CollectingAttachmentStore`` lists as unchanged for a while.
public struct AttachmentUnchanged: Sendable, Equatable {
    public var sha256: String
    /// What is held: finished, or partly uploaded.
    public var held: AttachmentHeld

    public init(sha256: String, held: AttachmentHeld) {
        self.sha256 = sha256
        self.held = held
    }
}

extension AttachmentStore {
    /// Marks `sha256` as in use when the store collects; otherwise only whether it is finished.
    public func keepIfFinished(_ sha256: String) async throws -> Bool {
        if let collecting = self as? any CollectingAttachmentStore { return try await collecting.keep(sha256) }
        if case .complete = try await held(sha256) { return true }
        return false
    }
}
