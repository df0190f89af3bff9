import FieldMerge
import FieldMergeJSON
import FieldMergeSQLite
import FieldMergeServer
import FieldMergeServerSQLite
import FieldMergeServerHTTP
import FieldMergeSyncTool
import Foundation
import Synchronization
import Testing

/// `fieldmerge sync`'s logic (``ReplicaSync``) against a live server on an ephemeral port:
/// replica files on disk, a schema file, HTTP on loopback.
@Suite struct SyncCommandTests {
    /// A temporary folder with the tests' schema written as a schema file.
    struct Folder {
        let path: String
        let schemaFile: String
        init() throws {
            path = FileManager.default.temporaryDirectory.appendingPathComponent("fm-synccli-\(UUID().uuidString)").path
            try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
            schemaFile = path + "/schema.json"
            try Data(SchemaDocument.encode(try httpTestSchema()).rendered().utf8).write(to: URL(fileURLWithPath: schemaFile))
        }
        func file(_ name: String) -> String { path + "/" + name }
        func remove() { try? FileManager.default.removeItem(atPath: path) }
    }

    static func input(_ running: RunningServer, _ folder: Folder, _ replica: String) -> ReplicaSyncInput {
        ReplicaSyncInput(url: running.syncURL.absoluteString, replica: folder.file(replica), schema: folder.schemaFile)
    }

    /// Edits a replica file the way an app would, with the store closed again afterwards.
    static func edit(_ path: String, _ body: (Store) throws -> Void) throws {
        let store = try Store(.file(path: path), schema: try httpTestSchema())
        try body(store)
        store.database.close()
    }

    static func contents(_ path: String) throws -> [String] {
        let store = try Store(.file(path: path), schema: try httpTestSchema())
        defer { store.database.close() }
        return try HTTPRoundTripTests.contents(store)
    }

    @Test func twoReplicas_syncedByTheCommand_converge() async throws {
        let folder = try Folder()
        defer { folder.remove() }
        let server = try RevisionServer(.file(path: folder.file("server.sqlite")), schema: try httpTestSchema())
        try await withHTTPServer(server) { running in
            let a = Self.input(running, folder, "a.sqlite"), b = Self.input(running, folder, "b.sqlite")
            // First use creates the replica.
            let created = await ReplicaSync.run(a)
            #expect(created.exit == .settled && created.created && created.error == nil)
            #expect(FileManager.default.fileExists(atPath: a.replica))
            try Self.edit(a.replica) { store in
                let list = try store.insert("lists", values: ["Home"])
                _ = try store.insert("tasks", values: ["Milk", false, 2, .integer(list)])
            }
            let sentA = await ReplicaSync.run(a)
            #expect(sentA.exit == .settled && sentA.summary.sent == 2 && sentA.unsynced.isEmpty)

            // Progress is reported after each request, with the records received so far.
            let reports = Mutex<[Int]>([])
            let gotB = await ReplicaSync.run(b) { progress in reports.withLock { $0.append(progress.received) } }
            #expect(gotB.exit == .settled && gotB.created && gotB.summary.received == 2)
            #expect(reports.withLock { $0 } == [2])

            // B edits with plain SQL (captured by the store's triggers), A with the API.
            try Self.edit(b.replica) { store in try store.database.run("UPDATE tasks SET title = 'Oat milk', count = count + 3") }
            try Self.edit(a.replica) { store in
                let task = try #require(try store.database.scalar("SELECT id FROM tasks"))
                guard case .integer(let id) = task else { Issue.record("no task id"); return }
                _ = try store.update("tasks", id: id, ["done": true, "count": 7])
            }
            #expect(await ReplicaSync.run(b).exit == .settled)
            let mergedA = await ReplicaSync.run(a)
            #expect(mergedA.exit == .settled && mergedA.summary.merged >= 1)
            #expect(await ReplicaSync.run(b).exit == .settled)

            let rowsA = try Self.contents(a.replica), rowsB = try Self.contents(b.replica)
            #expect(rowsA == rowsB)
            // Both edits kept: B's title, A's done, both increments (2 + 3 + 5).
            let task = try { () throws -> [[SQLValue]] in
                let store = try Store(.file(path: a.replica), schema: try httpTestSchema())
                defer { store.database.close() }
                return try store.database.rows("SELECT title, done, count FROM tasks")
            }()
            #expect(task == [[.text("Oat milk"), .integer(1), .integer(10)]])
        }
    }

    @Test func refusedChanges_leftStuck_exitNonZeroAndSayWhy() async throws {
        let folder = try Folder()
        defer { folder.remove() }
        var options = RevisionServer.Options()
        options.authorize = { $0.entity != "lists" }
        let server = try RevisionServer(.file(path: folder.file("server.sqlite")), schema: try httpTestSchema(), options: options)
        try await withHTTPServer(server) { running in
            let a = Self.input(running, folder, "a.sqlite")
            try Self.edit(a.replica) { store in
                _ = try store.insert("lists", values: ["Forbidden"])
                _ = try store.insert("tasks", values: ["Allowed", false, 0, nil])
            }
            let outcome = await ReplicaSync.run(a)
            #expect(outcome.error == nil)
            #expect(outcome.exit == .stuck && outcome.exit.rawValue == 1)
            #expect(outcome.unsynced.map { "\($0.entity) \($0.refusal?.code ?? "-")" } == ["lists unauthorized"])
            let report = ReplicaSyncReport(input: a, outcome: outcome)
            #expect(report.text.contains("1 changes left in the replica (1 refused by the server and kept aside"))
            #expect(report.text.contains("lists #-1 create: refused (unauthorized)"))
            #expect(report.json["exitCode"] == .integer(1))
            let message = try #require(outcome.unsynced.first?.refusal?.message)
            let expected: JSONValue = .array([.object([
                "entity": .string("lists"), "id": .integer(-1), "kind": .string("create"),
                "refusal": .object(["code": .string("unauthorized"), "message": .string(message)]),
            ])])
            #expect(report.json["unsynced"] == expected)
            // Still stuck on the next run, and still in the file: nothing is dropped.
            #expect(await ReplicaSync.run(a).exit == .stuck)
        }
    }

    @Test func badURLOrSchema_clearErrorAndNothingChanged() async throws {
        let folder = try Folder()
        defer { folder.remove() }
        let server = try RevisionServer(.file(path: folder.file("server.sqlite")), schema: try httpTestSchema())
        try await withHTTPServer(server) { running in
            let before = try await running.state()
            var badURL = Self.input(running, folder, "new.sqlite")
            badURL.url = "127.0.0.1:8080/sync"
            let urlOutcome = await ReplicaSync.run(badURL)
            #expect(urlOutcome.exit == .badInput && urlOutcome.exit.rawValue == 2)
            #expect(urlOutcome.badInput?.hasPrefix("bad --url 127.0.0.1:8080/sync") == true)

            try Data(#"{"entities": [{"name": "lists", "fields": [{"name": "name", "type": "txt"}]}]}"#.utf8)
                .write(to: URL(fileURLWithPath: folder.file("bad.json")))
            var badSchema = Self.input(running, folder, "new.sqlite")
            badSchema.schema = folder.file("bad.json")
            let schemaOutcome = await ReplicaSync.run(badSchema)
            #expect(schemaOutcome.exit == .badInput)
            #expect(schemaOutcome.badInput?.contains("bad schema file \(badSchema.schema): $.entities[0].fields[0].type") == true)
            #expect(ReplicaSyncReport(input: badSchema, outcome: schemaOutcome).text.hasSuffix("; nothing changed\n"))
            #expect(!FileManager.default.fileExists(atPath: badURL.replica))

            // An existing replica opened with another schema: refused, file untouched.
            let existing = Self.input(running, folder, "existing.sqlite")
            #expect(await ReplicaSync.run(existing).exit == .settled)
            try Self.edit(existing.replica) { store in _ = try store.insert("lists", values: ["Kept"]) }
            let bytes = try Data(contentsOf: URL(fileURLWithPath: existing.replica))
            var otherSchema = existing
            otherSchema.schema = folder.file("other.json")
            let other = try Schema([Entity("notes", fields: [Field("body", .text)])])
            try Data(SchemaDocument.encode(other).rendered().utf8).write(to: URL(fileURLWithPath: otherSchema.schema))
            let mismatch = await ReplicaSync.run(otherSchema)
            #expect(mismatch.exit == .badInput)
            #expect(mismatch.badInput?.hasPrefix("cannot open the replica \(existing.replica)") == true)
            #expect(try Data(contentsOf: URL(fileURLWithPath: existing.replica)) == bytes)

            // A new replica under a schema the server does not serve: refused by the server
            // (a protocol error, exit 4), and the replica it would have created is gone.
            var wrongServer = Self.input(running, folder, "other.sqlite")
            wrongServer.schema = otherSchema.schema
            let refused = await ReplicaSync.run(wrongServer)
            #expect(refused.exit == .protocolError && refused.exit.rawValue == 4)
            #expect(refused.error?.code == .rejected && refused.error?.message.contains("incompatibleSchema") == true)
            #expect(!FileManager.default.fileExists(atPath: wrongServer.replica))
            #expect(try await running.state() == before)
        }
    }

    @Test func unreachableServer_distinctExitCode_noReplicaLeftBehind() async throws {
        let folder = try Folder()
        defer { folder.remove() }
        // Port 1: nothing listens there, and no test's server can take it.
        var input = ReplicaSyncInput(url: "http://127.0.0.1:1/sync", replica: folder.file("a.sqlite"), schema: folder.schemaFile)
        input.untilSettled = true
        input.settleTimeout = 3
        let outcome = await ReplicaSync.run(input)
        #expect(outcome.exit == .unreachable && outcome.exit.rawValue == 3)
        // It tried again until the deadline: at least twice, unless one attempt alone outlasted
        // it (a loaded machine running the whole suite took 40 s for one refused connection).
        #expect(outcome.error?.isRetryable == true)
        #expect(outcome.attempts >= 2 || outcome.seconds >= input.settleTimeout, "\(outcome.attempts) attempts in \(outcome.seconds) s")
        #expect(!FileManager.default.fileExists(atPath: input.replica))
        #expect(ReplicaSyncReport(input: input, outcome: outcome).text.contains("FAILED (unreachable; try again later)"))
    }

    @Test func tokenFile_isSentAsTheBearerToken() async throws {
        let folder = try Folder()
        defer { folder.remove() }
        let server = try RevisionServer(.memory, schema: try httpTestSchema())
        try await withAuthenticatedServer(server, verifier: try await TestTokens.verifier()) { running in
            var input = Self.input(running, folder, "a.sqlite")
            let noToken = await ReplicaSync.run(input)
            #expect(noToken.exit == .protocolError && noToken.error?.message.contains("unauthenticated") == true)
            input.tokenFile = folder.file("token")
            try Data((try await TestTokens.token("ed") + "\n").utf8).write(to: URL(fileURLWithPath: folder.file("token")))
            #expect(await ReplicaSync.run(input).exit == .settled)
            input.tokenFile = folder.file("missing")
            #expect(await ReplicaSync.run(input).badInput == "cannot read the token file \(folder.file("missing"))")
        }
    }
}
