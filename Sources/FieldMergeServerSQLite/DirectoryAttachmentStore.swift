import FieldMerge
import FieldMergeFiles
import FieldMergeServer
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The default `AttachmentStore`: files in a directory, by default beside the SQLite file
/// (`server.sqlite.attachments/`).
///
/// ```
/// <directory>/partial/<sha256>      uploads not finished (appended to, never read)
/// <directory>/ab/<sha256>           finished attachments, by the first two hex digits
/// ```
///
/// A finished file appears by a rename of its partial file, after its SHA-256 and size were
/// checked and it was flushed to disk: a reader never sees a file being written. Uploads of
/// one hash are serialized in this process (one directory belongs to one server process, as
/// its SQLite file does). Files are read and hashed in chunks of ``chunkSize`` bytes.
public final class DirectoryAttachmentStore: AttachmentStore {
    /// The directory.
    public let directory: String
    /// The size of the chunks that reads return and hashing reads.
    public static let chunkSize = 256 * 1024
    /// The hashes whose upload is open.
    let uploading = Mutex<Set<String>>([])

    /// How uploads are hashed.
    public let hashing: AttachmentHashing
    /// The hash so far of uploads closed before their end (`ResumableDigests`): a resumed
    /// upload goes on from it rather than reading its file again. Forgotten when the file
    /// goes; a partial file is only ever appended to while it exists.
    let resumable = ResumableDigests()

    /// A store in `directory`, made (with its `partial` directory) when missing.
    ///
    /// - Throws: ``DirectoryAttachmentStoreError`` when a directory cannot be made.
    public init(directory: String, hashing: AttachmentHashing = .portable) throws {
        self.directory = directory
        self.hashing = hashing
        try Self.makeDirectory(directory)
        try Self.makeDirectory(directory + "/partial")
    }

    /// The store beside the SQLite file at `databasePath`: `<databasePath>.attachments`.
    public convenience init(besideDatabase databasePath: String, hashing: AttachmentHashing = .portable) throws {
        try self.init(directory: databasePath + ".attachments", hashing: hashing)
    }

    func partialPath(_ sha256: String) -> String { "\(directory)/partial/\(sha256)" }
    func finishedDirectory(_ sha256: String) -> String { "\(directory)/\(sha256.prefix(2))" }
    func finishedPath(_ sha256: String) -> String { "\(finishedDirectory(sha256))/\(sha256)" }

    public func held(_ sha256: String) async throws -> AttachmentHeld {
        try Self.checkHash(sha256)
        if let size = try Self.size(of: finishedPath(sha256)) { return .complete(size: size) }
        if let size = try Self.size(of: partialPath(sha256)) { return .partial(bytes: size) }
        return .absent
    }

    public func upload(_ sha256: String, at offset: Int64) async throws -> any AttachmentUpload {
        try Self.checkHash(sha256)
        guard uploading.withLock({ $0.insert(sha256).inserted }) else { throw AttachmentStoreError.busy }
        do {
            if let size = try Self.size(of: finishedPath(sha256)) { throw AttachmentStoreError.complete(size: size) }
            let held = try Self.size(of: partialPath(sha256)) ?? 0
            guard offset == held else { throw AttachmentStoreError.offsetMismatch(held: held) }
            let descriptor = open(partialPath(sha256), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
            guard descriptor >= 0 else { throw DirectoryAttachmentStoreError(call: "open", path: partialPath(sha256)) }
            do {
                return try DirectoryAttachmentUpload(
                    store: self, sha256: sha256, descriptor: descriptor, held: held, digest: resumable.take(sha256, held: held))
            } catch {
                close(descriptor)
                throw error
            }
        } catch {
            release(sha256)
            throw error
        }
    }

    public func read(_ sha256: String, range: Range<Int64>) async throws -> AsyncThrowingStream<[UInt8], any Error> {
        try Self.checkHash(sha256)
        let path = finishedPath(sha256)
        guard let size = try Self.size(of: path) else { throw AttachmentStoreError.notFound }
        precondition(range.lowerBound >= 0 && range.upperBound <= size, "the range \(range) is outside the \(size) bytes held")
        // Each chunk opens the file anew: a reader that stops early (a client gone) leaves
        // no descriptor open. A finished file never changes.
        let position = Position(range.lowerBound)
        return AsyncThrowingStream {
            let start = position.value.withLock { $0 }
            guard start < range.upperBound else { return nil }
            let chunk = try Self.read(path, at: start, count: Int(min(Int64(Self.chunkSize), range.upperBound - start)))
            guard !chunk.isEmpty else { throw DirectoryAttachmentStoreError(call: "read", path: path, code: EIO) }
            position.value.withLock { $0 = start + Int64(chunk.count) }
            return chunk
        }
    }

    private final class Position: Sendable {
        let value: Mutex<Int64>
        init(_ start: Int64) { value = Mutex(start) }
    }

    func release(_ sha256: String) {
        _ = uploading.withLock { $0.remove(sha256) }
    }

    /// Why a hash is refused before a path is made of it: the caller should have checked.
    private static func checkHash(_ sha256: String) throws {
        guard AttachmentReference.isSHA256(sha256) else {
            throw DirectoryAttachmentStoreError(call: "check", path: "<not a SHA-256>", code: EINVAL)
        }
    }

    /// The size of the regular file at `path`, or nil when there is none.
    static func size(of path: String) throws -> Int64? {
        try files { () throws(AttachmentFileError) in try AttachmentFiles.size(of: path) }
    }

    /// At most `count` bytes of the file at `path` from `offset`; fewer only at its end.
    static func read(_ path: String, at offset: Int64, count: Int) throws -> [UInt8] {
        try files { () throws(AttachmentFileError) in
            let descriptor = try AttachmentFiles.openForReading(path)
            defer { AttachmentFiles.close(descriptor) }
            return try AttachmentFiles.read(descriptor, path: path, at: offset, count: count)
        }
    }

    /// At most `count` bytes of the open file `descriptor` from `offset`; fewer only at its end.
    static func read(_ descriptor: Int32, path: String, at offset: Int64, count: Int) throws -> [UInt8] {
        try files { () throws(AttachmentFileError) in try AttachmentFiles.read(descriptor, path: path, at: offset, count: count) }
    }

    static func makeDirectory(_ path: String) throws {
        try files { () throws(AttachmentFileError) in try AttachmentFiles.makeDirectory(path) }
    }

    /// Runs `body` (the file calls the device's cache shares, in the core), its failure as
    /// a ``DirectoryAttachmentStoreError``.
    static func files<T>(_ body: () throws(AttachmentFileError) -> T) throws(DirectoryAttachmentStoreError) -> T {
        do { return try body() } catch { throw DirectoryAttachmentStoreError(call: error.call, path: error.path, code: error.code) }
    }
}

/// A system call of ``DirectoryAttachmentStore`` failed.
public struct DirectoryAttachmentStoreError: Error, CustomStringConvertible {
    public let call: String
    public let path: String
    public let code: Int32

    init(call: String, path: String, code: Int32 = errno) {
        self.call = call
        self.path = path
        self.code = code
    }

    public var description: String { "\(call) \(path): \(String(cString: strerror(code)))" }
}
