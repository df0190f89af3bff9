import FieldMergeJSON
import FieldMergeServer
import FieldMergeServerHTTP
import FieldMergeServerSQLite
import Foundation
import Hummingbird
import Testing

/// Clients too slow to send a request, or idle too long, are cut (Specs/http.md §3); a
/// response, however long it streams, is not. Timeouts of a few hundred milliseconds keep
/// the tests quick; what is checked is the outcome, never how fast it came.
@Suite struct SlowClientTests {
    static func configuration(
        read: Duration = ample, request: Duration = ample, idle: Duration = ample, maxConnections: Int = 512
    ) -> SyncHTTPServer.Configuration {
        .init(port: 0, readTimeout: read, requestTimeout: request, idleTimeout: idle, maxConnections: maxConnections)
    }

    /// A server with `configuration` and two routes of the tests: `GET /stream` writes five
    /// chunks 250 ms apart, `GET /hold` tells `arrived` and answers when `release` finishes.
    static func withServer<T>(
        _ configuration: SyncHTTPServer.Configuration, release: AsyncStream<Void> = AsyncStream { $0.finish() },
        arrived: AsyncStream<Void>.Continuation? = nil, _ body: (RunningServer) async throws -> T
    ) async throws -> T {
        let server = try RevisionServer(.memory, schema: httpTestSchema())
        return try await withHTTPServer(making: { logger, onListening in
            SyncHTTPServer(server: server, configuration: configuration, logger: logger, middleware: { router in
                router.get("/stream") { _, _ in
                    Response(status: .ok, body: ResponseBody { writer in
                        for chunk in 0..<5 {
                            try await Task.sleep(for: .milliseconds(250))
                            try await writer.write(ByteBuffer(string: "chunk \(chunk)\n"))
                        }
                        try await writer.finish(nil)
                    })
                }
                router.get("/hold") { _, _ in
                    arrived?.yield()
                    for await _ in release {}
                    return Response(status: .ok, body: ResponseBody(byteBuffer: ByteBuffer(string: "released")))
                }
            }, onListening: onListening)
        }, body)
    }

    static let health = "GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    /// A whole timeout for what a test does not time: a busy machine may take seconds to
    /// start the test's next step.
    static let ample = Duration.seconds(30)

    static func errorCode(_ response: RawHTTP.Response) throws -> JSONValue? {
        try JSONValue.parse(Data(response.body))["error"]
    }

    @Test func halfSentHead_isAnswered408AndClosed_afterTheReadTimeout() async throws {
        try await Self.withServer(Self.configuration(read: .milliseconds(300))) { running in
            let connection = try await RawConnection.open(port: running.port, sending: "POST /sync HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Le")
            await connection.waitForClose()
            #expect(connection.closed)
            let response = try RawHTTP.parse(connection.received)
            #expect(response.status == 408)
            #expect(response.headers["content-type"] == "application/json")
            #expect(try Self.errorCode(response) == .string("requestTimeout"))
        }
    }

    /// A request whose head is finished after its 408 (while the server still reads what
    /// arrives, so that the client gets the answer) never reaches the routes: nothing is
    /// written.
    @Test func requestCompletedAfterIts408_isNotApplied() async throws {
        try await Self.withServer(Self.configuration(read: .milliseconds(300))) { running in
            let connection = try await RawConnection.open(port: running.port, sending: "POST /sync HTTP/1.1\r\nHost: 127.0.0.1\r\n")
            while !connection.closed, (try? RawHTTP.parse(connection.received)) == nil { await connection.wait(for: .milliseconds(100)) }
            #expect(try RawHTTP.parse(connection.received).status == 408)
            let body = #"{"maxRevision":0,"changeSets":[{"types":["lists"],"lists":{"create":[-1],"update":[],"delete":[],"attributes":{"-1":{"name":"Home"}}}}]}"#
            // The server half-closed after its answer (the client sees the end of the
            // stream) and still reads; give it time to take the rest if it would.
            #expect(await connection.send("Content-Length: \(body.utf8.count)\r\n\r\n" + body))
            try await Task.sleep(for: .milliseconds(500))
            #expect(running.http.maxRevision == 0)
            #expect(running.http.statistics.syncs == 0)
        }
    }

    /// The read timeout is between reads, not for the whole head: a head sent in pieces,
    /// each within the timeout but all together longer, is answered.
    @Test func headInPieces_eachWithinTheReadTimeout_isAnswered() async throws {
        // Pieces 2 s apart, 10 s in all, against a timeout of 8 s: each gap has 6 s to spare
        // for a machine whose whole test suite runs at once. All pieces, the first included,
        // go out from one thread of their own: a busy suite delayed the test's own tasks by
        // more than that, between the first piece and the rest.
        try await Self.withServer(Self.configuration(read: .seconds(8))) { running in
            let pieces = ["GET /hea", "lth HTTP/1.1\r\n", "Host: 127.0", ".0.1\r\n", "Accept: */*\r\n", "\r\n"]
            let connection = try await RawConnection.open(port: running.port, sending: pieces, gapsOf: .seconds(2))
            let response = try await connection.readResponse()
            #expect(response.status == 200)
            #expect(try JSONValue.parse(Data(response.body))["status"] == .string("ok"))
        }
    }

    /// A client that sends nothing at all is closed without a word after the read timeout.
    @Test func silentNewConnection_isClosed_withoutAnAnswer() async throws {
        try await Self.withServer(Self.configuration(read: .milliseconds(300))) { running in
            let connection = try await RawConnection.open(port: running.port)
            await connection.waitForClose()
            #expect(connection.closed)
            #expect(connection.received.isEmpty)
        }
    }

    /// One byte of the body every 100 ms never pauses for the read timeout (2 s); the
    /// request timeout (800 ms) cuts it, and nothing of it reaches the server.
    @Test func bodyDrippedSlowly_isCutByTheRequestTimeout() async throws {
        try await Self.withServer(Self.configuration(read: .seconds(2), request: .milliseconds(800))) { running in
            let body = Array(#"{"maxRevision":0,"changeSets":[],"padding":"\#(String(repeating: "x", count: 200))"}"#.utf8)
            let connection = try await RawConnection.open(
                port: running.port, sending: "POST /sync HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: \(body.count)\r\n\r\n")
            let sent = await connection.drip(body, every: .milliseconds(100))
            await connection.waitForClose()
            #expect(sent < body.count)
            #expect(connection.closed)
            let response = try RawHTTP.parse(connection.received)
            #expect(response.status == 408)
            #expect(try Self.errorCode(response) == .string("requestTimeout"))
            #expect(running.http.statistics.syncs == 0)
        }
    }

    @Test func idleKeptAliveConnection_isClosed_afterTheIdleTimeout() async throws {
        try await Self.withServer(Self.configuration(idle: .milliseconds(400))) { running in
            // Two requests at once on the connection (pipelined): it is kept alive after
            // the first...
            let connection = try await RawConnection.open(port: running.port, sending: Self.health + Self.health)
            for _ in 0..<2 { #expect(try await connection.readResponse().status == 200) }
            // ...and closed, without a word, once idle for longer than the idle timeout.
            await connection.waitForClose()
            #expect(connection.closed)
            #expect(connection.received.isEmpty)
        }
    }

    /// The read and request timeouts are far shorter than the response takes to stream
    /// (1.25 s), and the pauses between its chunks longer: it arrives whole, and the
    /// connection then serves another request. (The idle timeout is long here only so that
    /// a busy machine's delay before that request does not end the connection.)
    @Test func streamedResponse_isNeverCut() async throws {
        let configuration = Self.configuration(read: .milliseconds(200), request: .milliseconds(200), idle: Self.ample)
        try await Self.withServer(configuration) { running in
            let connection = try await RawConnection.open(port: running.port, sending: "GET /stream HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            while !connection.closed, !String(decoding: connection.received, as: UTF8.self).contains("chunk 4") {
                await connection.wait(for: .milliseconds(100))
            }
            let text = String(decoding: connection.received, as: UTF8.self)
            #expect(text.hasPrefix("HTTP/1.1 200"))
            #expect((0..<5).allSatisfy { text.contains("chunk \($0)\n") })
            #expect(!connection.closed)
            // The end of the chunked body, then another request on the same connection.
            while !connection.closed, !String(decoding: connection.received, as: UTF8.self).hasSuffix("0\r\n\r\n") {
                await connection.wait(for: .milliseconds(100))
            }
            connection.clearReceived()
            #expect(await connection.send(Self.health))
            #expect(try await connection.readResponse().status == 200)
        }
    }

    /// A request the server takes long to answer (600 ms after it arrived, three times the
    /// read and request timeouts) is answered: they stop once the request has arrived.
    @Test func slowAnswer_isNotCut() async throws {
        let configuration = Self.configuration(read: .milliseconds(200), request: .milliseconds(200))
        let (release, releasing) = AsyncStream.makeStream(of: Void.self)
        let (arrived, arriving) = AsyncStream.makeStream(of: Void.self)
        try await Self.withServer(configuration, release: release, arrived: arriving) { running in
            let connection = try await RawConnection.open(port: running.port, sending: "GET /hold HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            for await _ in arrived { break }
            try await Task.sleep(for: .milliseconds(600))
            releasing.finish()
            let response = try await connection.readResponse()
            #expect(response.status == 200)
            #expect(String(decoding: response.body, as: UTF8.self) == "released")
        }
    }
}
