import FieldMergeJSON
import FieldMergeServerHTTP
import Foundation
import Testing

/// `maxConnections` (Specs/http.md §3): at the limit a new connection takes the place of the
/// one that has waited longest for its request, so slow clients cannot keep `/health` (or a
/// sync) out; connections being answered are never closed for it.
@Suite struct ConnectionLimitTests {
    /// Three slow clients fill a limit of three; the timeouts are long (30 s), so only the
    /// limit can make room. `/health` is answered, the oldest slow client is closed, and
    /// the two others are still open.
    @Test func atTheLimit_health_takesTheOldestSlowClientsPlace() async throws {
        try await SlowClientTests.withServer(SlowClientTests.configuration(maxConnections: 3)) { running in
            var slow: [RawConnection] = []
            for _ in 0..<3 {
                slow.append(try await RawConnection.open(port: running.port, sending: "POST /sync HTTP/1.1\r\nHost: 127.0.0.1\r\n"))
                try await Task.sleep(for: .milliseconds(50))  // so that their ages differ
            }
            let health = try await RawHTTP.exchange(port: running.port, method: "GET", path: "/health")
            #expect(health.status == 200)
            await slow[0].waitForClose()
            #expect(slow[0].closed)
            #expect(slow[0].received.isEmpty)
            for connection in slow.dropFirst() {
                await connection.wait(for: .milliseconds(200))
                #expect(!connection.closed)
            }
        }
    }

    /// With every connection being answered there is nothing to take the place of: a new
    /// connection is closed at once, the one being answered finishes, and the server goes
    /// on accepting connections.
    @Test func atTheLimit_withEveryConnectionAnswered_aNewOneIsClosed() async throws {
        let (release, releasing) = AsyncStream.makeStream(of: Void.self)
        let (arrived, arriving) = AsyncStream.makeStream(of: Void.self)
        let configuration = SlowClientTests.configuration(maxConnections: 1)
        try await SlowClientTests.withServer(configuration, release: release, arrived: arriving) { running in
            let held = try await RawConnection.open(port: running.port, sending: "GET /hold HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
            for await _ in arrived { break }  // the request has arrived and waits
            let refused = try await RawConnection.open(port: running.port)
            _ = await refused.send(SlowClientTests.health)
            await refused.waitForClose()
            #expect(refused.closed)
            #expect(refused.received.isEmpty)
            releasing.finish()
            #expect(try await held.readResponse().status == 200)
            held.close()
            try await Task.sleep(for: .milliseconds(100))  // the held connection is counted out
            let health = try await RawHTTP.exchange(port: running.port, method: "GET", path: "/health")
            #expect(health.status == 200)
        }
    }
}
