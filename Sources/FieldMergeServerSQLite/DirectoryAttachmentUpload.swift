import FieldMerge
import FieldMergeServer
import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// An open upload of a ``DirectoryAttachmentStore``: its partial file, open for appending.
///
/// The SHA-256 is computed as the bytes arrive (after the bytes an earlier upload left:
/// its hash as that upload left it, or read once when this one opens), so finishing does
/// not read the file again.
final class DirectoryAttachmentUpload: AttachmentUpload {
    private let store: DirectoryAttachmentStore
    private let sha256: String
    /// The descriptor (-1 once closed), the bytes held, and their hash so far.
    private let state: Mutex<(descriptor: Int32, held: Int64, hasher: any AttachmentDigest)>

    /// - Parameter digest: The hash of the `held` bytes, as the upload before left it; nil
    ///   reads them.
    /// - Throws: When the bytes already held cannot be read to begin the hash.
    init(store: DirectoryAttachmentStore, sha256: String, descriptor: Int32, held: Int64, digest: (any AttachmentDigest)?) throws {
        self.store = store
        self.sha256 = sha256
        let hasher = try digest ?? Self.hasher(store.partialPath(sha256), size: held, hashing: store.hashing)
        state = Mutex((descriptor, held, hasher))
    }

    var held: Int64 { get async { state.withLock { $0.held } } }

    func append(_ bytes: [UInt8]) async throws {
        try state.withLock { state in
            guard state.descriptor >= 0 else { throw DirectoryAttachmentStoreError(call: "write", path: store.partialPath(sha256), code: EBADF) }
            var written = 0
            while written < bytes.count {
                let count = bytes.withUnsafeBytes { write(state.descriptor, $0.baseAddress! + written, bytes.count - written) }
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { throw DirectoryAttachmentStoreError(call: "write", path: store.partialPath(sha256)) }
                written += count
            }
            state.held += Int64(bytes.count)
            state.hasher.update(bytes)
        }
    }

    func finish(size: Int64) async throws {
        let partial = store.partialPath(sha256)
        defer { closeDescriptor() }
        var (descriptor, held, hasher) = state.withLock { $0 }
        guard descriptor >= 0 else { throw DirectoryAttachmentStoreError(call: "finish", path: partial, code: EBADF) }
        guard held == size else {
            unlink(partial)
            throw AttachmentStoreError.sizeMismatch(expected: size, held: held)
        }
        guard fsync(descriptor) == 0 else { throw DirectoryAttachmentStoreError(call: "fsync", path: partial) }
        let actual = hasher.finalizeHex()
        guard actual == sha256 else {
            unlink(partial)
            throw AttachmentStoreError.hashMismatch(expected: sha256, actual: actual, size: size)
        }
        try DirectoryAttachmentStore.makeDirectory(store.finishedDirectory(sha256))
        guard rename(partial, store.finishedPath(sha256)) == 0 else {
            throw DirectoryAttachmentStoreError(call: "rename", path: partial)
        }
        Self.syncDirectory(store.finishedDirectory(sha256))
    }

    func close() async { closeDescriptor(keepingHash: true) }

    /// Closes the file once and lets another upload of the hash begin; with `keepingHash`
    /// (closed before its end) the hash so far waits in the store for the next one.
    private func closeDescriptor(keepingHash: Bool = false) {
        let (descriptor, held, hasher) = state.withLock { state in
            defer { state.descriptor = -1 }
            return state
        }
        guard descriptor >= 0 else { return }
        _ = closeFile(descriptor)
        if keepingHash { store.resumable.keep(sha256, held: held, digest: hasher) }
        store.release(sha256)
    }

    /// The hash of the first `size` bytes of the file at `path`, read in chunks, to go on with.
    static func hasher(_ path: String, size: Int64, hashing: AttachmentHashing) throws -> any AttachmentDigest {
        var hasher = hashing.digest()
        guard size > 0 else { return hasher }
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw DirectoryAttachmentStoreError(call: "open", path: path) }
        defer { _ = closeFile(descriptor) }
        var offset: Int64 = 0
        while offset < size {
            let chunk = try DirectoryAttachmentStore.read(
                descriptor, path: path, at: offset, count: Int(min(Int64(DirectoryAttachmentStore.chunkSize), size - offset)))
            guard !chunk.isEmpty else { break }
            hasher.update(chunk)
            offset += Int64(chunk.count)
        }
        return hasher
    }

    /// Flushes a directory's entries, so that a rename in it survives a crash.
    private static func syncDirectory(_ path: String) {
        let descriptor = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        _ = fsync(descriptor)
        _ = closeFile(descriptor)
    }
}

/// `close(2)`, which the upload's own `close()` hides inside the class.
private func closeFile(_ descriptor: Int32) -> Int32 { close(descriptor) }
