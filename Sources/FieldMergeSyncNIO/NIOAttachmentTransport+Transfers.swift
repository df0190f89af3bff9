import FieldMergeFiles
import FieldMergeProtocol
import FieldMergeSyncHTTP
import NIOCore
import NIOHTTP1

extension NIOAttachmentTransport {
    public func uploadAttachment(
        _ sha256: String, size: Int64, from path: String, offset: Int64, progress: (@Sendable (Int64) -> Void)?
    ) async throws -> AttachmentHolding {
        try HTTPTransport.checkHash(sha256)
        let descriptor = try AttachmentFiles.openForReading(path)
        defer { AttachmentFiles.close(descriptor) }
        let (files, chunkBytes) = (files, chunkBytes)
        let response = try await authorized { token in
            var head = request(.PUT, sha256, token: token)
            head.headers.add(name: "Upload-Offset", value: String(offset))
            head.headers.add(name: "Upload-Length", value: String(size))
            head.headers.add(name: "Content-Type", value: "application/octet-stream")
            head.headers.add(name: "Content-Length", value: String(max(0, size - offset)))
            return try await exchange.run(head, send: { outbound in
                // Each write waits while the connection is not writable (a few MiB queued):
                // the next chunk is read from the file as the last one goes out.
                var position = offset
                while position < size {
                    try Task.checkCancellation()
                    let count = Int(min(Int64(chunkBytes), size - position))
                    let chunk = try await files.read(descriptor, path: path, at: position, count: count)
                    try await outbound.write(.body(.byteBuffer(chunk)))
                    position += Int64(count)
                    if position < size { progress?(position) }
                }
            })
        }
        guard (200..<300).contains(response.status) else { throw http.failure(response.status, response.body, sha256) }
        let holding = try holding(response, sha256)
        switch holding {
        case .complete: progress?(size)
        case .partial(let bytes):
            guard bytes > offset || offset >= size else { throw TransportError("the server kept none of the upload of \(sha256)") }
            progress?(bytes)
        case .absent: throw TransportError("the server answered an upload of \(sha256) without Upload-Offset")
        }
        return holding
    }

    public func downloadAttachment(
        _ sha256: String, range: Range<Int64>?, to path: String, progress: (@Sendable (Int64) -> Void)?
    ) async throws {
        try await download(sha256, range: range, to: path, progress: progress, received: nil)
    }

    /// Each piece goes to `received` right after it is written, on the same thread, while
    /// it is still in that core's cache: the caller hashes it without reading the file back.
    public func downloadAttachment(
        _ sha256: String, range: Range<Int64>?, to path: String, progress: (@Sendable (Int64) -> Void)?,
        received: @escaping @Sendable (UnsafeRawBufferPointer) -> Void
    ) async throws {
        try await download(sha256, range: range, to: path, progress: progress, received: received)
    }

    private func download(
        _ sha256: String, range: Range<Int64>?, to path: String, progress: (@Sendable (Int64) -> Void)?,
        received: (@Sendable (UnsafeRawBufferPointer) -> Void)?
    ) async throws {
        try HTTPTransport.checkHash(sha256)
        if let range, range.isEmpty { return }
        let descriptor = try AttachmentFiles.openForAppending(path)
        defer { AttachmentFiles.close(descriptor) }
        // Each piece is in the file before the next is read: what arrived before a failure
        // stays there, and a resumed download starts after it.
        let target = BodyFileTarget(descriptor: descriptor, path: path, received: received, progress: progress)
        let response = try await authorized { token in
            var head = request(.GET, sha256, token: token)
            if let range { head.headers.add(name: "Range", value: "bytes=\(range.lowerBound)-\(range.upperBound - 1)") }
            return try await exchange.run(head, bodyInto: target)
        }
        // 200 to a range: something on the way ignored it and sent every byte, appended as
        // HTTPTransport does (the caller's check of the hash tells whether that was right).
        guard response.status == 200 || response.status == 206 else { throw http.failure(response.status, response.body, sha256) }
    }
}
