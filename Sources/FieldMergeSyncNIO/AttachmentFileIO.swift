import FieldMergeFiles
import NIOCore
import NIOPosix
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// The file side of ``NIOAttachmentTransport``'s uploads: chunks read into `ByteBuffer`s
/// with `pread` on NIO's blocking-I/O thread pool, never on an event loop or the concurrency
/// pool (downloads: ``BodyFileWriter``). Errors are the `AttachmentFileError`s the other
/// transports throw.
struct AttachmentFileIO: Sendable {
    let pool: NIOThreadPool
    let allocator = ByteBufferAllocator()

    /// Exactly `count` bytes of `descriptor` from `offset`.
    /// - Throws: `AttachmentFileError` for a failed read, or (EIO) a file shorter than that.
    func read(_ descriptor: Int32, path: String, at offset: Int64, count: Int) async throws -> ByteBuffer {
        let allocator = allocator
        return try await pool.runIfActive {
            var buffer = allocator.buffer(capacity: count)
            var failure: AttachmentFileError?
            buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: count) { target in
                var filled = 0
                while filled < count {
                    let got = pread(descriptor, target.baseAddress! + filled, count - filled, off_t(offset) + off_t(filled))
                    if got < 0 && errno == EINTR { continue }
                    guard got > 0 else {
                        failure = AttachmentFileError(call: "pread", path: path, code: got == 0 ? EIO /* the file shrank */ : errno)
                        break
                    }
                    filled += got
                }
                return filled
            }
            if let failure { throw failure }
            return buffer
        }
    }
}
