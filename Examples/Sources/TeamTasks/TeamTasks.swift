import FieldMerge
import FieldMergeSQLite
import FieldMergeServer
import FieldMergeServerSQLite
import FieldMergeServerHTTP
import FieldMergeSync
import FieldMergeSyncHTTP
import Foundation

/// Team tasks: a server embedded in this process over HTTP, and two devices, Alice's and
/// Bob's, each with its own SQLite file, that edit the same tasks offline and then sync.
/// Prints what happened, checks it, and exits with code 1 on anything unexpected.
@main struct TeamTasks {
    static func main() async {
        do {
            let outcome = try await run()
            if outcome.failures.isEmpty {
                print("team-tasks: ok")
                exit(0)
            }
            print("team-tasks: FAILED: \(outcome.failures.joined(separator: "; "))")
        } catch {
            print("team-tasks: FAILED: \(error)")
        }
        exit(1)
    }

    static func run() async throws -> Outcome {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("team-tasks-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let schema = TeamTask.schema

        // The server, with the app's own strategies, on a free port of 127.0.0.1.
        let (ports, listening) = AsyncStream.makeStream(of: Int.self)
        let http = SyncHTTPServer(
            server: try RevisionServer(.file(path: folder.appendingPathComponent("server.sqlite").path), schema: schema),
            configuration: .init(host: "127.0.0.1", port: 0),
            onListening: { _, port in listening.yield(port) })
        let serving = Task { try await http.runUntilShutdownSignal() }
        var portIterator = ports.makeAsyncIterator()
        guard let port = await portIterator.next() else { throw ExampleError("the server did not start") }
        let url = URL(string: "http://127.0.0.1:\(port)/sync")!
        print("server: listening on \(url)")

        // Two devices, each with its own replica file.
        func device(_ name: String) throws -> SyncClient {
            let store = try Store(.file(path: folder.appendingPathComponent("\(name).sqlite").path), schema: schema)
            return SyncClient(store: store, transport: HTTPTransport(url: url))
        }
        let alice = try device("alice"), bob = try device("bob")

        // Alice plans two tasks; both devices sync.
        try await alice.write { store in
            var notes = TeamTask(title: "Write release notes")
            try store.insert(&notes)
            var login = TeamTask(title: "Fix the login bug", status: "done", assignee: "alice", doneAt: 1_767_225_600_000)
            try store.insert(&login)
        }
        _ = try await alice.sync()
        _ = try await bob.sync()
        print("both devices hold: \(try await tasks(of: bob).map(\.title))")

        // Offline, at the same time. Alice: the notes go to review after 30 minutes; she
        // reopens the login bug.
        try await alice.write { store in
            var notes = try task("Write release notes", in: store)
            notes.status = "review"
            notes.minutesSpent += 30
            _ = try store.save(notes)
            var login = try task("Fix the login bug", in: store)
            login.status = "doing"
            login.doneAt = nil
            _ = try store.save(login)
        }
        try await Task.sleep(for: .milliseconds(20))     // Bob's edits are the later ones
        // Bob, a little later: he starts on the notes (he does not know Alice sent them to
        // review), takes them and spends 15 minutes; he corrects the login bug's date.
        try await bob.write { store in
            var notes = try task("Write release notes", in: store)
            notes.status = "doing"
            notes.assignee = "bob"
            notes.minutesSpent += 15
            _ = try store.save(notes)
            var login = try task("Fix the login bug", in: store)
            login.doneAt = 1_767_312_000_000
            _ = try store.save(login)
        }

        // Back online: Alice first, then Bob (whose client merges), then Alice catches up.
        _ = try await alice.sync()
        let bobs = try await bob.sync()
        _ = try await alice.sync()
        print("bob's sync decided \(bobs.conflicts.count) conflicts:")
        for conflict in bobs.conflicts { print("  \(conflict)") }

        var outcome = Outcome()
        let aliceTasks = try await tasks(of: alice), bobTasks = try await tasks(of: bob)
        outcome.expect(aliceTasks == bobTasks, true, "both replicas hold the same tasks")
        guard let notes = bobTasks.first(where: { $0.title == "Write release notes" }),
              let login = bobTasks.first(where: { $0.title == "Fix the login bug" })
        else { throw ExampleError("a task is missing: \(bobTasks)") }
        outcome.expect(notes.status, "review", "notes: status, further along the workflow than Bob's later 'doing'")
        outcome.expect(notes.assignee, "bob", "notes: assignee, only Bob set it")
        outcome.expect(notes.minutesSpent, 45, "notes: minutes, 30 + 15")
        outcome.expect(login.status, "doing", "login: status, reopened by Alice")
        outcome.expect(login.doneAt, nil, "login: doneAt, cleared by the record rule though Bob's date was the last edit")
        outcome.expect(bobs.conflicts.map { "\($0.field ?? "-"):\($0.strategy)" }.sorted(),
                       ["doneAt:doneAtFollowsStatus", "doneAt:lastEditWins", "minutesSpent:counter", "status:workflow"],
                       "conflicts Bob's client decided")

        // A graceful shutdown, as on SIGINT in a terminal: runUntilShutdownSignal returns.
        kill(getpid(), SIGINT)
        try await serving.value
        print("server: stopped on SIGINT")
        return outcome
    }

    /// Every task of a device, by id.
    static func tasks(of client: SyncClient) async throws -> [TeamTask] {
        try await client.write { try $0.fetchAll(TeamTask.self) }.sorted { $0.id < $1.id }
    }

    /// The task titled `title` in `store`.
    static func task(_ title: String, in store: Store) throws -> TeamTask {
        guard let task = try store.fetchAll(TeamTask.self).first(where: { $0.title == title }) else {
            throw ExampleError("no task titled '\(title)'")
        }
        return task
    }
}

struct ExampleError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
