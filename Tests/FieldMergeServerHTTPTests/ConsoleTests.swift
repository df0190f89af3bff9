import FieldMerge
import FieldMergeJSON
import FieldMergeProtocol
import FieldMergeServer
import FieldMergeServerAuth
@testable import FieldMergeServeCommand
@testable import FieldMergeServerHTTP
import FieldMergeServerSQLite
import Foundation
import Testing

/// The operator's console (Specs/http.md, "The operator's console"): who may read it, and
/// what its overview says after real syncs. `Scripts/console-check` loads the page in a
/// real browser.
@Suite struct ConsoleTests {
    static func configuration(_ console: SyncConsole = SyncConsole()) -> SyncHTTPServer.Configuration {
        var configuration = SyncHTTPServer.Configuration(port: 0)
        configuration.console = console
        return configuration
    }

    static func overview(_ port: Int, token: String? = nil) async throws -> RawHTTP.Response {
        try await RawHTTP.exchange(port: port, method: "GET", path: "/console/api/overview", headers: token.map(bearer) ?? [:])
    }

    static func json(_ response: RawHTTP.Response) throws -> JSONValue { try JSONValue.parse(Data(response.body)) }

    /// With tokens: the page needs none, the overview a token with the console's role.
    @Test(arguments: ["admin", "ops"])
    func withTokens_overviewNeedsTheRole(_ role: String) async throws {
        let verifier = try await TestTokens.verifier()
        let server = try RevisionServer(.memory, schema: try httpTestSchema())
        try await withHTTPServer(making: { logger, onListening in
            SyncHTTPServer(
                server: server, configuration: Self.configuration(SyncConsole(role: role)), logger: logger,
                middleware: { $0.add(middleware: BearerAuthenticator(verifier: verifier)) }, onListening: onListening)
        }) { running in
            // The page, its script and style: no token (a browser cannot send one), no data.
            let page = try await RawHTTP.exchange(port: running.port, method: "GET", path: "/console")
            #expect(page.status == 200)
            #expect(page.headers["content-type"] == "text/html; charset=utf-8")
            #expect(page.headers["content-security-policy"]?.contains("default-src 'none'") == true)
            #expect(page.headers["cache-control"] == "no-store")
            #expect(String(decoding: page.body, as: UTF8.self).contains("<script src=\"/console/console.js\""))
            let script = try await RawHTTP.exchange(port: running.port, method: "GET", path: "/console/console.js")
            #expect(script.status == 200)
            #expect(script.headers["content-type"] == "text/javascript; charset=utf-8")
            #expect(!String(decoding: script.body, as: UTF8.self).contains("innerHTML"))
            #expect(try await RawHTTP.exchange(port: running.port, method: "GET", path: "/console/console.css").status == 200)
            #expect(try await RawHTTP.exchange(port: running.port, method: "POST", path: "/console").status == 405)

            let none = try await Self.overview(running.port)
            #expect(none.status == 401)
            #expect(none.headers["www-authenticate"] == "Bearer")
            #expect(try Self.json(none)["error"] == .string("unauthenticated"))
            let other = role == "admin" ? "ops" : "admin"
            let wrong = try await Self.overview(running.port, token: try await TestTokens.token("carl", roles: ["editor", other]))
            #expect(wrong.status == 403)
            #expect(try Self.json(wrong)["error"] == .string("forbidden"))
            #expect(try Self.json(wrong)["message"] == .string("the console needs the role '\(role)' in the token"))
            let right = try await Self.overview(running.port, token: try await TestTokens.token("olga", roles: [role]))
            #expect(right.status == 200)
            #expect(right.headers["content-type"] == "application/json")
            let overview = try Self.json(right)
            #expect(overview["viewer"] == .string("olga"))
            #expect(overview["role"] == .string(role))
            // Only GET on the overview.
            let post = try await RawHTTP.exchange(
                port: running.port, path: "/console/api/overview", headers: bearer(try await TestTokens.token("olga", roles: [role])))
            #expect(post.status == 405)
            // Other paths under /console are the endpoint's 404, behind the token like any.
            #expect(try await RawHTTP.exchange(port: running.port, method: "GET", path: "/console/other").status == 401)
        }
    }

    /// Without authentication the overview answers loopback clients (the tests are one);
    /// without a console the paths are 404.
    @Test func withoutTokens_loopback_andOffIs404() async throws {
        try await withHTTPServer(try RevisionServer(.memory, schema: try httpTestSchema()), configuration: Self.configuration()) { running in
            let overview = try await Self.overview(running.port)
            #expect(overview.status == 200)
            #expect(try Self.json(overview)["viewer"] == .null)
        }
        try await withHTTPServer(try RevisionServer(.memory, schema: try httpTestSchema())) { running in
            for path in ["/console", "/console/console.js", "/console/api/overview"] {
                let response = try await RawHTTP.exchange(port: running.port, method: "GET", path: path)
                #expect(response.status == 404)
                #expect(try Self.json(response)["error"] == .string("notFound"))
            }
        }
    }

    /// Real syncs on a SQLite data set, then the overview: the revision, a device behind,
    /// the conflict, the refusal, the failure, the entities with their records.
    @Test func overviewAfterSyncs_showsDevicesBehindConflictsRefusalsAndEntities() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("fm-console-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("server.sqlite").path
        let server = try RevisionServer(.file(path: file), schema: try httpTestSchema())
        let seed = WireRecord(id: -1, present: FieldMask([0]), values: [.text("Seed")])
        _ = try await server.handle(SyncRequest(maxRevision: 0, changeSets: [ChangeSet(entities: [
            EntityChanges(entity: "lists", create: [-1], records: [seed]),
        ])], clientID: "old-device", requestID: "s1"))
        var console = try #require(ServeConsoleOptions.parse(["--console"]).load(storage: "SQLite \(file)", sqlite: file))
        console.maxDevices = 3
        try await withHTTPServer(server, configuration: Self.configuration(console)) { running in
            func post(_ body: [UInt8]) async throws -> Int { try await RawHTTP.exchange(port: running.port, body: body).status }
            // A device that caught up early, at revision 1, and was not seen again.
            #expect(try await post(try metricsRequest(maxRevision: 0, [], client: "early", request: "e1")) == 200)
            let early = running.http.maxRevision
            // Another writes: applied, then a conflict, then a refusal.
            #expect(try await post(try metricsRequest(maxRevision: 1, [ChangeSet(entities: [
                EntityChanges(entity: "lists", create: [-1], update: [1], records: [listRecord(1, "Renamed", revision: 1), listRecord(-1, "Second")]),
            ])], client: "busy", request: "b1")) == 200)
            #expect(try await post(try metricsRequest(maxRevision: 2, [ChangeSet(entities: [
                EntityChanges(entity: "lists", update: [1], records: [listRecord(1, "Stale", revision: 1)]),
            ])], client: "busy", request: "b2")) == 200)
            #expect(try await post(try metricsRequest(maxRevision: 2, [ChangeSet(entities: [
                EntityChanges(entity: "lists", create: [-1, -2], records: [listRecord(-1, "Third"), listRecord(-2, "bad\u{0}name")]),
            ])], client: "busy", request: "b3")) == 200)
            #expect(try await post(Array("{not json".utf8)) == 400)
            let revision = running.http.maxRevision
            #expect(revision > early)

            let response = try await Self.overview(running.port)
            #expect(response.status == 200)
            let overview = try Self.json(response)
            #expect(overview["server"]?["revision"] == .integer(revision))
            #expect(overview["storage"] == .string("SQLite \(file)"))
            let totals = try #require(overview["totals"])
            #expect(totals["requests"] == .integer(5))
            #expect(totals["ok"] == .integer(2))
            #expect(totals["conflicts"] == .integer(1))
            #expect(totals["refusals"] == .integer(1))
            #expect(totals["rejected"] == .integer(1))
            #expect(totals["retryable"] == .integer(0))
            #expect(totals["revisions"] == .integer(revision - early))
            // The last hour, per minute: 60 of them, this minute's last.
            guard case .array(let minutes)? = overview["minutes"] else { Issue.record("no minutes"); return }
            #expect(minutes.count == 60)
            let counted = minutes.reduce(Int64(0)) { sum, minute in
                if case .integer(let n)? = minute["requests"] { return sum + n }
                return sum
            }
            #expect(counted == 5)
            // Devices, the furthest behind first; the one the storage knows from before
            // (no revision known) after them.
            #expect(overview["devices"]?["known"] == .integer(3))
            guard case .array(let devices)? = overview["devices"]?["list"] else { Issue.record("no devices"); return }
            #expect(devices.count == 3)
            #expect(devices.first?["client"] == .string("early"))
            #expect(devices.first?["behind"] == .integer(revision - early))
            #expect(devices.first?["reached"] == .integer(early))
            #expect(devices.dropFirst().first?["client"] == .string("busy"))
            #expect(devices.dropFirst().first?["behind"] == .integer(0))
            #expect(devices.dropFirst().first?["conflicts"] == .integer(1))
            #expect(devices.dropFirst().first?["refusals"] == .integer(1))
            #expect(devices.last?["client"] == .string("old-device"))
            #expect(devices.last?["behind"] == .null)
            // Entities: the storage's records, what the endpoint saw applied.
            guard case .array(let entities)? = overview["entities"] else { Issue.record("no entities"); return }
            let lists = try #require(entities.first { $0["name"] == .string("lists") })
            #expect(lists["records"] == .integer(3))
            #expect(lists["tombstones"] == .integer(0))
            #expect(lists["applied"] == .integer(3))
            #expect(lists["conflicts"] == .integer(1))
            #expect(lists["refusals"] == .integer(1))
            #expect(entities.first?["name"] == .string("lists"), "the largest first")
            #expect(overview["refusals"] == .array([.object(["entity": .string("lists"), "code": .string("unstorable"), "count": .integer(1)])]))
            guard case .array(let failures)? = overview["failures"] else { Issue.record("no failures"); return }
            #expect(failures.count == 1)
            #expect(failures.first?["status"] == .integer(400))
            #expect(failures.first?["code"] == .string("malformedJSON"))
            #expect(overview["dataSet"]?["available"] == .bool(true))
            // The seed's and the writer's (a request that writes nothing stores no reply).
            #expect(overview["dataSet"]?["storedReplies"] == .integer(2))
        }
    }

    /// A stored reply of an authenticated device names it `<length>:<user>/<client>`.
    @Test func storedDevice_isClientAndUser() {
        let owned = ConsoleDataSetStatistics.Device(client: "3:ann/phone-ann", user: "3:ann", lastSeen: 1)
        #expect(ConsoleOverview.storedDevice(owned) == ("phone-ann", "ann"))
        let tricky = ConsoleDataSetStatistics.Device(client: "5:a/b:c/d/e", user: "5:a/b:c", lastSeen: 1)
        #expect(ConsoleOverview.storedDevice(tricky) == ("d/e", "a/b:c"))
        let open = ConsoleDataSetStatistics.Device(client: "tablet", user: "", lastSeen: 1)
        #expect(ConsoleOverview.storedDevice(open) == ("tablet", nil))
    }

    /// The tracker keeps at most so many devices and failures.
    @Test func tracker_isBounded() throws {
        let tracker = ConsoleTracker()
        let error = WireErrorBody(error: "malformedJSON", message: String(repeating: "x", count: 1000))
        for index in 0..<(ConsoleTracker.maxDevices + 5) {
            let request = SyncRequest(maxRevision: 0, changeSets: [], clientID: "device-\(index)")
            tracker.record(SyncObservation(failed: 400, error: error), request: request, handled: nil, identity: nil, error: error)
        }
        let state = tracker.state.withLock { $0 }
        #expect(state.devices.count == ConsoleTracker.maxDevices)
        #expect(state.failures.count == ConsoleTracker.maxFailures)
        #expect(state.failures.allSatisfy { $0.message.count == 300 })
        #expect(state.totals.rejected == ConsoleTracker.maxDevices + 5)
    }

    /// `serve --console` as a process, behind tokens with `--console-role`.
    @Test func serveConsole_withTokensAndRole() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("fm-console-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let variable = "FM_CONSOLE_TEST_SECRET"
        let serve = try ServeProcess.start(
            ["serve", "--port", "0", "--db", folder.appendingPathComponent("server.sqlite").path,
             "--schema", try ServeMetricsTests().schemaFile(in: folder), "--jwt-secret-env", variable, "--console", "--console-role", "ops"],
            environment: [variable: String(decoding: TestTokens.secret, as: UTF8.self)])
        guard let port = try await serve.port() else {
            Issue.record("serve did not start: \(serve.errors)")
            try await serve.stop(SIGKILL)
            return
        }
        #expect(try await RawHTTP.exchange(port: port, method: "GET", path: "/console").status == 200)
        #expect(try await Self.overview(port).status == 401)
        #expect(try await Self.overview(port, token: try await TestTokens.token("ann", roles: ["admin"])).status == 403)
        let body = try StructuredLogTests.request("From a device", id: "1")
        #expect(try await RawHTTP.exchange(port: port, headers: bearer(try await TestTokens.token("ann")), body: body).status == 200)
        let overview = try await Self.overview(port, token: try await TestTokens.token("ann", roles: ["ops"]))
        #expect(overview.status == 200)
        let json = try Self.json(overview)
        #expect(json["server"]?["revision"] == .integer(1))
        #expect(json["dataSet"]?["available"] == .bool(true))
        #expect(serve.errors.contains("console at /console, for tokens with the role ops"))
        #expect(try await serve.stop() == 0)
    }

    @Test func consoleRoleNeedsConsole() async throws {
        let (status, errors) = try await ServeProcess.run(["serve", "--db", "/tmp/unused.sqlite", "--console-role", "ops"])
        #expect(status == 64)
        #expect(errors.contains("--console-role needs --console"))
    }
}
