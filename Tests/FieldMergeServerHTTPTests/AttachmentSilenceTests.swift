import FieldMergeFiles
import FieldMergeProtocol
@testable import FieldMergeSyncNIO
import Foundation
import NIOCore
import NIOEmbedded
import NIOHTTP1
import Synchronization
import Testing

/// The silence timeout of ``NIOAttachmentTransport`` counts the bytes of a body going into
/// its file: a download longer than the timeout goes on while bytes keep coming.
///
/// Driven on an `EmbeddedChannel` with the transport's own handlers, in their order. NIO's
/// `IdleStateHandler` schedules its first check on the loop's virtual clock but measures the
/// silence on the real one, so the test lets real time pass beyond the timeout while the
/// pieces arrive, and runs each check right after a piece: no socket, no scheduler, nothing
/// a stall of the test process could turn into a false failure. With the file writer placed
/// before the idle handler (where it first was), the body's reads never reach the idle
/// handler and the check fails the download as silence.
@Suite struct AttachmentSilenceTests {
    static let timeout = TimeAmount.milliseconds(600)
    static let step = TimeAmount.milliseconds(200)

    @Test func aBodyThatKeepsComingPastTheTimeout_isNotSilence() throws {
        let directory = try AttachmentFiles.makeTemporaryDirectory(prefix: "silence-")
        defer { AttachmentFiles.removeTree(directory) }
        let path = directory + "/body.bin"
        let descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        #expect(descriptor >= 0)
        defer { close(descriptor) }
        let pieces = Mutex(0)
        let target = BodyFileTarget(descriptor: descriptor, path: path, received: { _ in pieces.withLock { $0 += 1 } }, progress: nil)

        let channel = EmbeddedChannel()
        try AttachmentExchange.addHandlers(to: channel.pipeline.syncOperations, timeout: Self.timeout, origin: "test", target: target)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 9)).wait()
        try channel.writeOutbound(HTTPClientRequestPart.head(HTTPRequestHead(version: .http1_1, method: .GET, uri: "/attachments/x")))
        try channel.writeOutbound(HTTPClientRequestPart.end(nil))

        let piece = [UInt8](repeating: 0x5a, count: 1_000)
        let count = 8  // 8 × 200 ms: 1.6 s, well past the 0.6 s timeout
        try channel.writeInbound(ByteBuffer(string: "HTTP/1.1 200 OK\r\nContent-Length: \(count * piece.count)\r\n\r\n"))
        let started = ContinuousClock.now
        for _ in 0..<count {
            Thread.sleep(forTimeInterval: Double(Self.step.nanoseconds) / 1e9)
            try channel.writeInbound(ByteBuffer(bytes: piece))
            // The idle handler's checks that are due run now, right after the piece.
            channel.embeddedEventLoop.advanceTime(by: Self.step)
            try channel.throwIfErrorCaught()
            #expect(channel.isActive)
        }
        #expect(ContinuousClock.now - started >= .milliseconds(1_200))  // twice the timeout
        #expect(pieces.withLock { $0 } == count)
        #expect(lseek(descriptor, 0, SEEK_END) == off_t(count * piece.count))
        #expect(throws: Never.self) { try channel.finish(acceptAlreadyClosed: false) }
    }

    @Test func silenceLongerThanTheTimeout_failsTheDownload() throws {
        let channel = EmbeddedChannel()
        try AttachmentExchange.addHandlers(to: channel.pipeline.syncOperations, timeout: Self.timeout, origin: "test", target: nil)
        try channel.connect(to: SocketAddress(ipAddress: "127.0.0.1", port: 9)).wait()
        try channel.writeOutbound(HTTPClientRequestPart.head(HTTPRequestHead(version: .http1_1, method: .GET, uri: "/attachments/x")))
        try channel.writeOutbound(HTTPClientRequestPart.end(nil))
        try channel.writeInbound(ByteBuffer(string: "HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\n"))
        Thread.sleep(forTimeInterval: Double(Self.timeout.nanoseconds) / 1e9 + 0.1)
        channel.embeddedEventLoop.advanceTime(by: Self.timeout)
        #expect(throws: TransportError.self) { try channel.throwIfErrorCaught() }
        #expect(!channel.isActive)
    }
}
