import FieldMerge
import FieldMergeFiles

/// The directory where a device keeps the bytes of attachments, by their SHA-256
/// (Specs/attachments.md, "The device"):
///
/// ```
/// <directory>/ab/ab12…            a whole attachment, named by its digest
/// <directory>/tmp/part-XXXXXX     a copy being written (flushed, then renamed into place)
/// <directory>/tmp/<sha256>.download   a download not finished, resumed where it stopped
/// ```
///
/// A file enters its place by a rename, after it was flushed to disk and its digest and
/// size are known: a reader never sees half a file. Files never change once in place.
/// The store's `__fm_attachments` table says which of them are owed to the server.
public struct AttachmentCache: Sendable, Equatable {
    /// The directory.
    public let directory: String

    /// A cache in `directory`, made (with its `tmp`) when missing.
    init(directory: String) throws(StoreError) {
        self.directory = directory
        try Self.files { () throws(AttachmentFileError) in
            try AttachmentFiles.makeDirectory(directory)
            try AttachmentFiles.makeDirectory(directory + "/tmp")
        }
    }

    /// Where files are written before they enter the cache.
    var temporaryDirectory: String { "\(directory)/tmp" }

    func folder(_ sha256: String) -> String { "\(directory)/\(sha256.prefix(2))" }

    /// Where the bytes of `sha256` are when the cache holds them.
    public func path(_ sha256: String) -> String { "\(folder(sha256))/\(sha256)" }

    /// Where a download of `sha256` is written until it is complete and checked.
    func downloadPath(_ sha256: String) -> String { "\(temporaryDirectory)/\(sha256).download" }

    /// The size of the cached file of `sha256`, or nil when it is not cached.
    func size(_ sha256: String) throws(StoreError) -> Int64? {
        try Self.files { () throws(AttachmentFileError) in try AttachmentFiles.size(of: path(sha256)) }
    }

    /// Writes `bytes` into the cache (nothing when the file is there already, with their size).
    /// - Returns: Their digest.
    func put(_ bytes: [UInt8], hashing: AttachmentHashing) throws(StoreError) -> String {
        var digest = hashing.digest()
        digest.update(bytes)
        let sha256 = digest.finalizeHex()
        // A file of another size under this name is damaged: it is replaced.
        guard try size(sha256) != Int64(bytes.count) else { return sha256 }
        try Self.files { () throws(AttachmentFileError) in
            let (descriptor, temporary) = try AttachmentFiles.makeTemporary(in: temporaryDirectory)
            do throws(AttachmentFileError) {
                defer { AttachmentFiles.close(descriptor) }
                try AttachmentFiles.write(descriptor, path: temporary, bytes)
                try AttachmentFiles.sync(descriptor, path: temporary)
            } catch {
                AttachmentFiles.remove(temporary)
                throw error
            }
            try place(temporary, as: sha256)
        }
        return sha256
    }

    /// Copies the file at `source` into the cache, hashing it on the way.
    /// - Returns: Its digest and size.
    func put(contentsOf source: String, hashing: AttachmentHashing) throws(StoreError) -> (sha256: String, size: Int64) {
        try Self.files { () throws(AttachmentFileError) in
            let copy = try AttachmentFiles.copy(source, intoTemporaryOf: temporaryDirectory, hashing: hashing)
            if try AttachmentFiles.size(of: path(copy.sha256)) == copy.size {
                AttachmentFiles.remove(copy.path)
            } else {
                try place(copy.path, as: copy.sha256)
            }
            return (copy.sha256, copy.size)
        }
    }

    /// Renames the flushed file `temporary` into the place of `sha256`.
    func place(_ temporary: String, as sha256: String) throws(AttachmentFileError) {
        do throws(AttachmentFileError) {
            try AttachmentFiles.makeDirectory(folder(sha256))
            try AttachmentFiles.rename(temporary, to: path(sha256), directory: folder(sha256))
        } catch {
            AttachmentFiles.remove(temporary)
            throw error
        }
    }

    /// Removes the cached file of `sha256`.
    func remove(_ sha256: String) { AttachmentFiles.remove(path(sha256)) }

    /// The digests of every cached file.
    package func cachedDigests() -> [String] {
        AttachmentFiles.names(in: directory).filter { $0.utf8.count == 2 && $0 != "tmp" }.flatMap { folder in
            AttachmentFiles.names(in: "\(directory)/\(folder)").filter { AttachmentReference.isSHA256($0) && $0.hasPrefix(folder) }
        }
    }

    /// Runs `body`, turning a failed system call into ``StoreError/Code/file``.
    static func files<T>(_ body: () throws(AttachmentFileError) -> T) throws(StoreError) -> T {
        do { return try body() } catch { throw StoreError(.file, error.description) }
    }
}
