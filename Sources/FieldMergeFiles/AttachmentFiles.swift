import FieldMerge
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The file work the device's attachment cache and the transports share (Specs/attachments.md
/// §7): plain system calls, a chunk at a time, no Foundation. Package-internal: apps use
/// the store's and the client's calls.
package enum AttachmentFiles {
    /// The size of the chunks files are read, hashed and copied in.
    package static let chunkSize = 256 * 1024

    /// The size of the regular file at `path`, or nil when there is none.
    package static func size(of path: String) throws(AttachmentFileError) -> Int64? {
        var info = stat()
        guard stat(path, &info) == 0 else {
            if errno == ENOENT || errno == ENOTDIR { return nil }
            throw AttachmentFileError(call: "stat", path: path)
        }
        return Int64(info.st_size)
    }

    /// Opens `path` for reading.
    package static func openForReading(_ path: String) throws(AttachmentFileError) -> Int32 {
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw AttachmentFileError(call: "open", path: path) }
        return descriptor
    }

    /// Opens (creating it when missing) `path` to append to it.
    package static func openForAppending(_ path: String) throws(AttachmentFileError) -> Int32 {
        let descriptor = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { throw AttachmentFileError(call: "open", path: path) }
        return descriptor
    }

    package static func close(_ descriptor: Int32) { _ = systemClose(descriptor) }

    /// At most `count` bytes of `descriptor` from `offset`; fewer only at the file's end.
    package static func read(_ descriptor: Int32, path: String, at offset: Int64, count: Int) throws(AttachmentFileError) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: count)
        var filled = 0
        while filled < count {
            let got = bytes.withUnsafeMutableBytes { pread(descriptor, $0.baseAddress! + filled, count - filled, off_t(offset) + off_t(filled)) }
            if got < 0 && errno == EINTR { continue }
            guard got >= 0 else { throw AttachmentFileError(call: "pread", path: path) }
            if got == 0 { break }
            filled += got
        }
        bytes.removeSubrange(filled...)
        return bytes
    }

    /// Writes every byte of `bytes` at the descriptor's position.
    package static func write(_ descriptor: Int32, path: String, _ bytes: UnsafeRawBufferPointer) throws(AttachmentFileError) {
        var written = 0
        while written < bytes.count {
            let count = systemWrite(descriptor, bytes.baseAddress! + written, bytes.count - written)
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { throw AttachmentFileError(call: "write", path: path) }
            written += count
        }
    }

    /// Writes every byte of `bytes` at the descriptor's position.
    package static func write(_ descriptor: Int32, path: String, _ bytes: [UInt8]) throws(AttachmentFileError) {
        let failure: AttachmentFileError? = bytes.withUnsafeBytes { buffer in
            do throws(AttachmentFileError) {
                try write(descriptor, path: path, buffer)
                return nil
            } catch {
                return error
            }
        }
        if let failure { throw failure }
    }

    /// Flushes the file to disk.
    package static func sync(_ descriptor: Int32, path: String) throws(AttachmentFileError) {
        guard fsync(descriptor) == 0 else { throw AttachmentFileError(call: "fsync", path: path) }
    }

    /// Makes a directory when missing.
    package static func makeDirectory(_ path: String) throws(AttachmentFileError) {
        guard mkdir(path, 0o755) == 0 || errno == EEXIST else { throw AttachmentFileError(call: "mkdir", path: path) }
    }

    /// A new empty file in `directory`, open for writing, with a unique name.
    package static func makeTemporary(in directory: String) throws(AttachmentFileError) -> (descriptor: Int32, path: String) {
        var template = Array("\(directory)/part-XXXXXX".utf8CString)
        let descriptor = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard descriptor >= 0 else { throw AttachmentFileError(call: "mkstemp", path: directory) }
        let path = template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        return (descriptor, path)
    }

    /// A new directory named after `prefix` under the system's temporary directory.
    package static func makeTemporaryDirectory(prefix: String) throws(AttachmentFileError) -> String {
        let base = getenv("TMPDIR").map { String(cString: $0) } ?? "/tmp"
        var template = Array("\(base)/\(prefix)-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        guard made != nil else { throw AttachmentFileError(call: "mkdtemp", path: base) }
        return template.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
    }

    /// Moves `source` to `destination` (replacing it), then flushes the directory of
    /// `destination` so that the rename survives a crash.
    package static func rename(_ source: String, to destination: String, directory: String) throws(AttachmentFileError) {
        guard systemRename(source, destination) == 0 else { throw AttachmentFileError(call: "rename", path: source) }
        let descriptor = open(directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard descriptor >= 0 else { return }
        _ = fsync(descriptor)
        close(descriptor)
    }

    /// Removes the file at `path`; nothing when there is none.
    package static func remove(_ path: String) {
        _ = unlink(path)
    }

    /// The names in `directory` (not `.` and `..`); empty when it does not exist.
    package static func names(in directory: String) -> [String] {
        guard let handle = opendir(directory) else { return [] }
        defer { closedir(handle) }
        var names: [String] = []
        while let entry = readdir(handle) {
            let name = withUnsafePointer(to: entry.pointee.d_name) {
                $0.withMemoryRebound(to: CChar.self, capacity: Int(NAME_MAX) + 1) { String(cString: $0) }
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// Removes `directory` with everything in it, two levels deep (the cache's layout).
    package static func removeTree(_ directory: String) {
        for name in names(in: directory) {
            let path = "\(directory)/\(name)"
            for inner in names(in: path) { remove("\(path)/\(inner)") }
            if rmdir(path) != 0 { remove(path) }
        }
        _ = rmdir(directory)
    }

    /// The SHA-256 (hexadecimal) and size of the file at `path`, read in chunks.
    package static func hash(_ path: String, hashing: AttachmentHashing = .portable) throws(AttachmentFileError) -> (sha256: String, size: Int64) {
        let descriptor = try openForReading(path)
        defer { close(descriptor) }
        var hasher = hashing.digest()
        let size = try chunks(of: descriptor, path: path) { chunk in hasher.update(chunk) }
        return (hasher.finalizeHex(), size)
    }

    /// Copies the file at `source` into a new temporary file of `directory`, chunk by
    /// chunk, hashing what it copies; the copy is flushed to disk.
    package static func copy(
        _ source: String, intoTemporaryOf directory: String, hashing: AttachmentHashing = .portable
    ) throws(AttachmentFileError) -> (path: String, sha256: String, size: Int64) {
        let input = try openForReading(source)
        defer { close(input) }
        let (output, path) = try makeTemporary(in: directory)
        defer { close(output) }
        do throws(AttachmentFileError) {
            var hasher = hashing.digest()
            let size = try chunks(of: input, path: source) { (chunk) throws(AttachmentFileError) in
                hasher.update(chunk)
                try write(output, path: path, chunk)
            }
            try sync(output, path: path)
            return (path, hasher.finalizeHex(), size)
        } catch {
            remove(path)
            throw error
        }
    }

    /// Reads `descriptor` from its start to its end in chunks of ``chunkSize``, handing each
    /// to `body`.
    /// - Returns: The bytes read.
    private static func chunks(
        of descriptor: Int32, path: String, _ body: ([UInt8]) throws(AttachmentFileError) -> Void
    ) throws(AttachmentFileError) -> Int64 {
        var offset: Int64 = 0
        while true {
            let chunk = try read(descriptor, path: path, at: offset, count: chunkSize)
            guard !chunk.isEmpty else { return offset }
            try body(chunk)
            offset += Int64(chunk.count)
        }
    }
}

/// A system call on an attachment's file failed: which, on what path, and why.
package struct AttachmentFileError: Error, Equatable, CustomStringConvertible {
    package let call: String
    package let path: String
    package let code: Int32

    package init(call: String, path: String, code: Int32 = errno) {
        self.call = call
        self.path = path
        self.code = code
    }

    /// Whether the file was missing.
    package var isMissing: Bool { code == ENOENT }

    package var description: String { "\(call) \(path): \(String(cString: strerror(code)))" }
}

// The enum's own `close`, `write` and `rename` hide the system's inside it.
private func systemClose(_ descriptor: Int32) -> Int32 { close(descriptor) }
private func systemWrite(_ descriptor: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int { write(descriptor, buffer, count) }
private func systemRename(_ source: String, _ destination: String) -> Int32 { rename(source, destination) }
