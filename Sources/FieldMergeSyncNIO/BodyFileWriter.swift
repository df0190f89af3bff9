import FieldMergeFiles
import NIOCore
import NIOHTTP1

/// Where a download's body goes: appended to a file descriptor, each piece then handed to
/// `received` (the caller's hash) and the total reported to `progress`.
struct BodyFileTarget: Sendable {
    let descriptor: Int32
    let path: String
    let received: (@Sendable (UnsafeRawBufferPointer) -> Void)?
    let progress: (@Sendable (Int64) -> Void)?
}

/// Writes the body of a 2xx response into its file on the event loop, piece by piece as the
/// socket gives them: no copy, no hop to another thread, the piece still in the cache when
/// it is hashed, and the socket not read again before the piece is in the file. The head,
/// the end and any other response's body go on to the exchange. A failed write fails the
/// connection with its `AttachmentFileError`.
final class BodyFileWriter: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPClientResponsePart
    typealias InboundOut = HTTPClientResponsePart

    private let target: BodyFileTarget
    private var writing = false
    private var failed = false
    private var written: Int64 = 0

    init(_ target: BodyFileTarget) { self.target = target }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head(let head):
            writing = (200..<300).contains(head.status.code)
            context.fireChannelRead(data)
        case .body(let buffer) where writing:
            guard !failed else { return }
            do {
                try buffer.withUnsafeReadableBytes { (bytes) throws(AttachmentFileError) in
                    try AttachmentFiles.write(target.descriptor, path: target.path, bytes)
                    target.received?(bytes)
                }
            } catch {
                failed = true
                context.fireErrorCaught(error)
                context.close(promise: nil)
                return
            }
            written += Int64(buffer.readableBytes)
            target.progress?(written)
        case .body, .end:
            context.fireChannelRead(data)
        }
    }
}
