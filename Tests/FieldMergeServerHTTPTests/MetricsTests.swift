import FieldMerge
import FieldMergeJSON
import FieldMergeProtocol
import FieldMergeServer
@testable import FieldMergeServerHTTP
import FieldMergeServerPrometheus
import FieldMergeServerSQLite
import Foundation
import NIOCore
import Testing

/// `GET /metrics` over HTTP (Specs/http.md, "Metrics and logs"): what a scrape shows after
/// real syncs, and who may scrape.
@Suite struct MetricsTests {
    static let token = "scrape-token-0123456789"

    static func configuration(_ metrics: SyncMetrics) -> SyncHTTPServer.Configuration {
        var configuration = SyncHTTPServer.Configuration(port: 0)
        configuration.metrics = metrics
        return configuration
    }

    /// Six requests (applied, a conflict, a refusal, a catch-up, a retry answered from its
    /// stored reply, a malformed body), then one scrape: each counter and its labels.
    @Test func scrapeAfterSyncs_countsOutcomesConflictsRefusalsAndCatchUp() async throws {
        let metrics = SyncMetrics.prometheus(schema: try httpTestSchema(), token: Self.token)
        try await withHTTPServer(try await metricsServer(metrics), configuration: Self.configuration(metrics)) { running in
            func post(_ body: [UInt8]) async throws -> RawHTTP.Response { try await RawHTTP.exchange(port: running.port, body: body) }
            // Applied: list 1 renamed (at its revision 1) and a list created.
            let applied = try metricsRequest(maxRevision: 1, [ChangeSet(entities: [
                EntityChanges(entity: "lists", create: [-1], update: [1], records: [listRecord(1, "Renamed", revision: 1), listRecord(-1, "Second")]),
            ])], request: "r1")
            #expect(try await post(applied).status == 200)
            // A conflict: list 1 again, at the revision it no longer has.
            let stale = try metricsRequest(maxRevision: 2, [ChangeSet(entities: [
                EntityChanges(entity: "lists", update: [1], records: [listRecord(1, "Stale", revision: 1)]),
            ])], request: "r2")
            #expect(try await post(stale).status == 200)
            // A refusal: a name holding U+0000 is unstorable; the other record of the change set goes in.
            let refused = try metricsRequest(maxRevision: 2, [ChangeSet(entities: [
                EntityChanges(entity: "lists", create: [-1, -2], records: [listRecord(-1, "Third"), listRecord(-2, "bad\u{0}name")]),
            ])], request: "r3")
            #expect(try await post(refused).status == 200)
            // A new device's catch-up: every list.
            let catchUp = try await post(try metricsRequest(maxRevision: 0, [], client: "second-device", request: "r4"))
            #expect(catchUp.status == 200)
            let page = try WireCodec(schema: try httpTestSchema()).decodeResponse(catchUp.body)
            let caughtUp = page.changeSets.flatMap(\.entities).reduce(0) { $0 + $1.create.count + $1.update.count }
            #expect(caughtUp == 3)
            // The device's last request again (its answer lost): its stored reply.
            #expect(try await post(refused).status == 200)
            #expect(try await post(Array("{not json".utf8)).status == 400)

            let scrape = try await RawHTTP.scrape(port: running.port, token: Self.token)
            #expect(scrape.status == 200)
            #expect(scrape.headers["content-type"]?.hasPrefix("text/plain; version=0.0.4") == true)
            let metrics = try MetricsPage(String(decoding: scrape.body, as: UTF8.self))
            #expect(metrics.value("fieldmerge_sync_requests_total", ["outcome": "ok", "status": "200"]) == 3)
            #expect(metrics.value("fieldmerge_sync_requests_total", ["outcome": "conflict", "status": "200"]) == 2)
            #expect(metrics.value("fieldmerge_sync_requests_total", ["outcome": "rejected", "status": "400"]) == 1)
            #expect(metrics.value("fieldmerge_sync_errors_total", ["status": "400", "code": "malformedJSON"]) == 1)
            #expect(metrics.value("fieldmerge_change_sets_total", ["result": "applied"]) == 2)
            #expect(metrics.value("fieldmerge_change_sets_total", ["result": "conflict"]) == 1)
            #expect(metrics.value("fieldmerge_records_applied_total", ["entity": "lists"]) == 3)
            #expect(metrics.value("fieldmerge_conflicts_total", ["entity": "lists"]) == 1)
            #expect(metrics.value("fieldmerge_refusals_total", ["entity": "lists", "code": "unstorable"]) == 1)
            #expect(metrics.value("fieldmerge_catchup_records_total", ["entity": "lists"]) == 3)
            #expect(metrics.value("fieldmerge_catchup_bytes_total") == Double(catchUp.body.count))
            #expect(metrics.value("fieldmerge_stored_replies_served_total") == 1)
            #expect(metrics.series("fieldmerge_storage_errors_total").isEmpty)
            #expect(metrics.value("fieldmerge_sync_request_duration_seconds_count", ["outcome": "ok"]) == 3)
            // Decoded six times (the malformed body too); the catch-up read by the seed and
            // the four requests the server answered anew (a stored reply is not timed).
            #expect(metrics.value("fieldmerge_sync_phase_duration_seconds_count", ["phase": "serverDecode"]) == 6)
            #expect(metrics.value("fieldmerge_sync_phase_duration_seconds_count", ["phase": "catchUp"]) == 5)
            // Labels are bounded: the same names on every series, never a client id.
            for sample in metrics.series("fieldmerge_refusals_total") { #expect(Set(sample.labels.keys) == ["entity", "code"]) }
            for sample in metrics.series("fieldmerge_sync_requests_total") { #expect(Set(sample.labels.keys) == ["outcome", "status"]) }
            #expect(!metrics.samples.contains { $0.labels.values.contains("device") || $0.labels.values.contains("second-device") })
        }
    }

    @Test func metricsToken_isRequired() async throws {
        let metrics = SyncMetrics.prometheus(schema: try httpTestSchema(), token: Self.token)
        try await withHTTPServer(try await metricsServer(metrics), configuration: Self.configuration(metrics)) { running in
            let none = try await RawHTTP.scrape(port: running.port)
            #expect(none.status == 401)
            #expect(none.headers["www-authenticate"] == "Bearer")
            #expect(try JSONValue.parse(Data(none.body))["error"] == .string("unauthenticated"))
            #expect(try await RawHTTP.scrape(port: running.port, token: Self.token + "x").status == 401)
            #expect(try await RawHTTP.scrape(port: running.port, token: String(Self.token.dropLast())).status == 401)
            #expect(try await RawHTTP.scrape(port: running.port, token: Self.token).status == 200)
            // Only GET.
            let post = try await RawHTTP.exchange(port: running.port, path: "/metrics", headers: ["Authorization": "Bearer \(Self.token)"])
            #expect(post.status == 405)
        }
    }

    @Test func metricsOff_is404() async throws {
        try await withHTTPServer(try RevisionServer(.memory, schema: try httpTestSchema())) { running in
            let response = try await RawHTTP.scrape(port: running.port, token: Self.token)
            #expect(response.status == 404)
            #expect(try JSONValue.parse(Data(response.body))["error"] == .string("notFound"))
        }
    }

    /// Without a token the page is served to loopback clients (the tests are one).
    @Test func withoutToken_loopbackClientsScrape() async throws {
        let metrics = SyncMetrics.prometheus(schema: try httpTestSchema(), token: nil)
        #expect(metrics.access == .loopback)
        try await withHTTPServer(try await metricsServer(metrics), configuration: Self.configuration(metrics)) { running in
            #expect(try await RawHTTP.exchange(port: running.port, body: try metricsRequest(maxRevision: 0, [], request: "x")).status == 200)
            let scrape = try await RawHTTP.scrape(port: running.port)
            #expect(scrape.status == 200)
            let page = try MetricsPage(String(decoding: scrape.body, as: UTF8.self))
            #expect(page.value("fieldmerge_sync_requests_total", ["outcome": "ok", "status": "200"]) == 1)
        }
    }

    @Test func loopbackAddresses() throws {
        #expect(SyncResponder.isLoopback(try SocketAddress(ipAddress: "127.0.0.1", port: 1)))
        #expect(SyncResponder.isLoopback(try SocketAddress(ipAddress: "127.8.9.10", port: 1)))
        #expect(SyncResponder.isLoopback(try SocketAddress(ipAddress: "::1", port: 1)))
        #expect(!SyncResponder.isLoopback(try SocketAddress(ipAddress: "10.0.0.1", port: 1)))
        #expect(!SyncResponder.isLoopback(try SocketAddress(ipAddress: "128.0.0.1", port: 1)))
        #expect(!SyncResponder.isLoopback(try SocketAddress(ipAddress: "::2", port: 1)))
    }

    /// The live subscribers' gauge goes up while a stream is open and down once it closed.
    @Test func liveSubscribersGauge() async throws {
        let metrics = SyncMetrics.prometheus(schema: try httpTestSchema(), token: Self.token)
        var configuration = Self.configuration(metrics)
        configuration.liveKeepAlive = .milliseconds(200)
        try await withHTTPServer(try await metricsServer(metrics), configuration: configuration) { running in
            func subscribers() async throws -> Double? {
                let scrape = try await RawHTTP.scrape(port: running.port, token: Self.token)
                return try MetricsPage(String(decoding: scrape.body, as: UTF8.self))
                    .value("fieldmerge_live_subscribers", ["channel": "events"])
            }
            let connection = try await RawConnection.open(port: running.port, sending: LiveEndpointTests.eventsRequest)
            #expect(await LiveEndpointTests.read(connection, until: "event: ready"))
            #expect(try await subscribers() == 1)
            connection.close()
            // The server notices the closed connection on its next write (a keep-alive):
            // wait for the gauge, bounded.
            var now = try await subscribers()
            let start = ContinuousClock.now
            while now != 0, ContinuousClock.now - start < .seconds(30) {
                try await Task.sleep(for: .milliseconds(100))
                now = try await subscribers()
            }
            #expect(now == 0)
        }
    }
}
