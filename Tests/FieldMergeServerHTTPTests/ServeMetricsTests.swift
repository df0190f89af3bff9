import FieldMergeJSON
import Foundation
import Testing

/// `fieldmerge-server serve --metrics --metrics-token-env --log-format json` as a process:
/// the options as an operator types them.
@Suite struct ServeMetricsTests {
    @Test func serveWithMetricsTokenAndJSONLogs() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("fm-metrics-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let token = "metrics-secret-42"
        let serve = try ServeProcess.start(
            ["serve", "--port", "0", "--db", folder.appendingPathComponent("server.sqlite").path, "--schema", try schemaFile(in: folder),
             "--metrics", "--metrics-token-env", "FM_TEST_METRICS_TOKEN", "--log-format", "json"],
            environment: ["FM_TEST_METRICS_TOKEN": token])
        guard let port = try await serve.port() else {
            Issue.record("serve did not start: \(serve.errors)")
            try await serve.stop(SIGKILL)
            return
        }
        let body = try StructuredLogTests.request("From a device", id: "1")
        #expect(try await RawHTTP.exchange(port: port, headers: ["X-Request-ID": "cli-7"], body: body).status == 200)
        #expect(try await RawHTTP.scrape(port: port).status == 401)
        let scrape = try await RawHTTP.scrape(port: port, token: token)
        #expect(scrape.status == 200)
        let page = try MetricsPage(String(decoding: scrape.body, as: UTF8.self))
        #expect(page.value("fieldmerge_sync_requests_total", ["outcome": "ok", "status": "200"]) == 1)
        #expect(page.value("fieldmerge_records_applied_total", ["entity": "lists"]) == 1)
        // SQLite commits are timed through the server's probe.
        #expect(page.value("fieldmerge_sync_phase_duration_seconds_count", ["phase": "serverCommit"]) ?? 0 >= 1)
        // Every line of standard error is a JSON object; the sync's (logged before its
        // answer was sent) carries its id.
        let lines = serve.errors.split(separator: "\n")
        #expect(try await serve.stop() == 0)
        let objects = try lines.map { try #require(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any], "\($0)") }
        #expect(objects.contains { $0["message"] as? String == "sync" && $0["id"] as? String == "cli-7" && $0["status"] as? Int == 200 })
    }

    @Test func metricsTokenNeedsMetrics() async throws {
        let (status, errors) = try await ServeProcess.run(["serve", "--db", "/tmp/unused.sqlite", "--metrics-token-env", "X"])
        #expect(status == 64)
        #expect(errors.contains("--metrics-token-file and --metrics-token-env need --metrics"))
    }

    /// The tests' schema as a file `serve --schema` reads.
    func schemaFile(in folder: URL) throws -> String {
        let file = folder.appendingPathComponent("schema.json")
        try Data(SchemaDocument.encode(try httpTestSchema()).rendered().utf8).write(to: file)
        return file.path
    }
}
