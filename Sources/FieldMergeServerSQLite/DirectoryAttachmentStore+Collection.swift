import FieldMerge
import FieldMergeServer

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Garbage collection in the directory: a file's modification time is when it was last
/// written, finished (the rename keeps it) or kept. Keeping and removing take the lock that
/// uploads take, so each is one step with its check in this process, which owns the
/// directory.
extension DirectoryAttachmentStore: CollectingAttachmentStore {
    public func keep(_ sha256: String) async throws -> Bool {
        guard AttachmentReference.isSHA256(sha256) else { return false }
        let path = finishedPath(sha256)
        return try uploading.withLock { _ in
            // The times given as nil are "now".
            guard utimensat(AT_FDCWD, path, nil, 0) == 0 else {
                if errno == ENOENT { return false }
                throw DirectoryAttachmentStoreError(call: "utimensat", path: path)
            }
            return true
        }
    }

    public func unchanged(for seconds: Int64, prefix: String) async throws -> [AttachmentUnchanged] {
        let cutoff = Self.now() - seconds
        var found: [AttachmentUnchanged] = []
        for name in try Self.names(in: "\(directory)/\(prefix)") where name.hasPrefix(prefix) && AttachmentReference.isSHA256(name) {
            if let (size, changed) = try Self.sizeAndTime(of: finishedPath(name)), changed <= cutoff {
                found.append(AttachmentUnchanged(sha256: name, held: .complete(size: size)))
            }
        }
        let open = uploading.withLock { $0 }
        for name in try Self.names(in: "\(directory)/partial") where name.hasPrefix(prefix) && AttachmentReference.isSHA256(name) && !open.contains(name) {
            if let (size, changed) = try Self.sizeAndTime(of: partialPath(name)), changed <= cutoff {
                found.append(AttachmentUnchanged(sha256: name, held: .partial(bytes: size)))
            }
        }
        return found.sorted { $0.sha256 < $1.sha256 }
    }

    public func remove(_ sha256: String, ifUnchangedFor seconds: Int64) async throws -> Bool {
        guard AttachmentReference.isSHA256(sha256) else { return false }
        let cutoff = Self.now() - seconds
        return try uploading.withLock { open in
            guard !open.contains(sha256) else { return false }
            var removed = false
            for path in [finishedPath(sha256), partialPath(sha256)] {
                guard let (_, changed) = try Self.sizeAndTime(of: path), changed <= cutoff else { continue }
                guard unlink(path) == 0 || errno == ENOENT else { throw DirectoryAttachmentStoreError(call: "unlink", path: path) }
                resumable.forget(sha256)
                removed = true
            }
            return removed
        }
    }

    /// The size and the modification time (whole seconds) of the file at `path`, or nil.
    static func sizeAndTime(of path: String) throws -> (Int64, Int64)? {
        var info = stat()
        guard stat(path, &info) == 0 else {
            if errno == ENOENT { return nil }
            throw DirectoryAttachmentStoreError(call: "stat", path: path)
        }
        #if canImport(Darwin)
        return (Int64(info.st_size), Int64(info.st_mtimespec.tv_sec))
        #else
        return (Int64(info.st_size), Int64(info.st_mtim.tv_sec))
        #endif
    }

    /// Seconds since 1970 by the system's clock: its fine-grained reading, never behind a
    /// file time the kernel just set. `time()` reads the coarse clock, which can still be in
    /// the second before a modification time Linux stamped from the fine clock (multigrain
    /// timestamps): a file touched "now" then looked changed in the future.
    static func now() -> Int64 {
        var clock = timespec()
        clock_gettime(CLOCK_REALTIME, &clock)
        return Int64(clock.tv_sec)
    }

    /// The names in the directory at `path` (none when it does not exist).
    static func names(in path: String) throws -> [String] {
        guard let handle = opendir(path) else {
            if errno == ENOENT { return [] }
            throw DirectoryAttachmentStoreError(call: "opendir", path: path)
        }
        defer { closedir(handle) }
        var names: [String] = []
        while let entry = readdir(handle) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }
}
