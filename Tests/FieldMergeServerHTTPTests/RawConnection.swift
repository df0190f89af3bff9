import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// One TCP connection to the server kept open by hand, to send a request in pieces, pause,
/// and see whether and when the server answers or closes it. Used by one test at a time;
/// each call blocks a thread of its own (``RawHTTP/onThread(_:)``).
final class RawConnection: @unchecked Sendable {
    private var socket: Int32
    /// What the server sent so far.
    private(set) var received: [UInt8] = []
    /// Whether the server closed the connection (end of stream or reset).
    private(set) var closed = false

    private init(socket: Int32) { self.socket = socket }

    /// Connects and sends `first` right away, on the same thread (a test under load may
    /// wait long for a thread; the server's read timeout runs from the connection on).
    static func open(port: Int, sending first: String = "") async throws -> RawConnection {
        RawConnection(socket: try await RawHTTP.onThread {
            let socket = try RawHTTP.connect(port: port)
            if !first.isEmpty { try RawHTTP.send(socket, Array(first.utf8)) }
            return socket
        })
    }

    /// Connects and sends each of `pieces`, `gap` apart, all on one thread of its own: the
    /// gaps the server sees, from the first byte on, do not depend on Swift concurrency's
    /// threads (busy under a full test suite). Throws when the server closed the connection
    /// before the last piece was sent.
    static func open(port: Int, sending pieces: [String], gapsOf gap: Duration) async throws -> RawConnection {
        let microseconds = UInt32(gap.components.seconds * 1_000_000 + gap.components.attoseconds / 1_000_000_000_000)
        return RawConnection(socket: try await RawHTTP.onThread {
            let socket = try RawHTTP.connect(port: port)
            do {
                for (index, piece) in pieces.enumerated() {
                    if index > 0 { usleep(microseconds) }
                    try RawHTTP.send(socket, Array(piece.utf8))
                }
            } catch {
                Glibc.close(socket)
                throw error
            }
            return socket
        })
    }

    deinit { close() }

    /// Closes the connection (again: no effect).
    func close() {
        guard socket >= 0 else { return }
        Glibc.close(socket)
        socket = -1
    }

    /// Sends `bytes`; false when the server had closed the connection.
    @discardableResult
    func send(_ text: String) async -> Bool { await send(Array(text.utf8)) }

    @discardableResult
    func send(_ bytes: [UInt8]) async -> Bool {
        let socket = socket
        return (try? await RawHTTP.onThread { try RawHTTP.send(socket, bytes) }) != nil
    }

    /// Sends `bytes` one at a time, `interval` apart, until all are sent or the server
    /// answers or closes; returns how many were sent.
    func drip(_ bytes: [UInt8], every interval: Duration) async -> Int {
        for (index, byte) in bytes.enumerated() {
            guard await send([byte]) else { return index }
            if await wait(for: interval) { return index + 1 }
        }
        return bytes.count
    }

    /// Reads what arrives for up to `duration`; true as soon as the server sent something
    /// or closed.
    @discardableResult
    func wait(for duration: Duration) async -> Bool {
        let socket = socket
        let milliseconds = Int32(duration.components.seconds * 1000 + duration.components.attoseconds / 1_000_000_000_000_000)
        let (bytes, ended) = await (try? RawHTTP.onThread { Self.read(socket, timeout: milliseconds) }) ?? ([], true)
        received += bytes
        if ended { closed = true }
        return !bytes.isEmpty || ended
    }

    /// Forgets what was received so far.
    func clearReceived() { received = [] }

    /// Reads until the server closes the connection, for at most `limit`.
    func waitForClose(limit: Duration = .seconds(20)) async {
        let start = ContinuousClock.now
        while !closed, ContinuousClock.now - start < limit { await wait(for: .milliseconds(200)) }
    }

    /// Reads until `received` holds one whole response (headers and a `Content-Length`
    /// body), and takes it out of `received`.
    func readResponse(limit: Duration = .seconds(20)) async throws -> RawHTTP.Response {
        let start = ContinuousClock.now
        while ContinuousClock.now - start < limit {
            if let response = try? RawHTTP.parse(received), let length = response.headers["content-length"].flatMap(Int.init),
                response.body.count == length, let headEnd = received.firstRange(of: Array("\r\n\r\n".utf8))?.upperBound
            {
                received.removeFirst(headEnd + length)  // the next response may have come with it
                return response
            }
            if closed { break }
            await wait(for: .milliseconds(100))
        }
        return try RawHTTP.parse(received)
    }

    /// One poll and the reads it allows: the bytes, and whether the stream ended.
    private static func read(_ socket: Int32, timeout: Int32) -> ([UInt8], Bool) {
        var descriptor = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
        guard poll(&descriptor, 1, timeout) > 0 else { return ([], false) }
        var buffer = [UInt8](repeating: 0, count: 65_536)
        let count = buffer.withUnsafeMutableBytes { recv(socket, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
        if count > 0 { return (Array(buffer[0..<count]), false) }
        return ([], count == 0 || (errno != EAGAIN && errno != EWOULDBLOCK))
    }
}
