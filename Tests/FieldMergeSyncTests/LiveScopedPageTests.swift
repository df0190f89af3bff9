import FieldMerge
import FieldMergeProtocol
import FieldMergeSQLite
@testable import FieldMergeServer
import FieldMergeServerSQLite
@testable import FieldMergeSync
import FieldMergeWorkload
import Synchronization
import Testing

/// Live pages with scopes (Specs/live.md §2): a device that checks a page's holdings gets the
/// changes of its scope pushed, one whose grants changed is poked, and a device that holds
/// other roots than a page says syncs instead of applying it.
@Suite struct LiveScopedPageTests {
    static let ann = SyncIdentity(user: "ann")

    /// A server with scopes where project 1 (ann's, by membership) and project 2 exist, at
    /// revision 1, and its admin's client.
    static func world() async throws -> (RevisionServer, SyncClient) {
        let server = try ScopeEndToEndTests.server()
        let admin = try ScopeEndToEndTests.client(server, SyncIdentity(user: "root", roles: ["admin"]), replica: 1)
        try await admin.write { store in
            let one = try store.insert("projects", values: [.text("One")])
            _ = try store.insert("projects", values: [.text("Two")])
            _ = try store.insert("memberships", values: [.text("ann"), .integer(one)])
        }
        _ = try await admin.sync()
        return (server, admin)
    }

    static func addTask(_ title: String, project: Int64, by admin: SyncClient) async throws {
        try await admin.write { _ = try $0.insert("tasks", values: [.text(title), .integer(project)]) }
        _ = try await admin.sync()
    }

    @Test func aSubscriberThatChecksHoldingsGetsItsScopeAsPages() async throws {
        let (server, admin) = try await Self.world()
        var events = try server.live.subscribe(identity: Self.ann, scopedPages: true).makeAsyncIterator()
        #expect(await events.next() == .ready(revision: 1))
        #expect(try await LiveSyncTests.eventually { server.live.isIdle })
        try await Self.addTask("elsewhere", project: 2, by: admin)
        #expect(try await LiveSyncTests.eventually { server.live.revision == 2 && server.live.isIdle })
        try await Self.addTask("mine", project: 1, by: admin)
        // Nothing for revision 2 (project Two); revision 3 (project One) as a page from 1,
        // the cursor its device was last brought to.
        guard case .changes(let after, let revision, let json)? = await events.next() else {
            Issue.record("expected a page")
            return
        }
        #expect(after == 1 && revision == 3)
        let response = try WireCodec(schema: server.schema).decodeResponse(json)
        #expect(response.maxRevision == 3 && !response.hasMore)
        #expect(response.scopes == ScopeHoldings(["project": .some([1])]))
        let records = response.changeSets.flatMap(\.entities).flatMap { changes in changes.records.map { (changes.entity, $0) } }
        #expect(records.map(\.0) == ["tasks"])
        #expect(records.map { $0.1.values.first } == [.text("mine")])
        // Ann joins Two: her grants grow, and she is poked (a page could not bring the
        // project's earlier records).
        try await admin.write { _ = try $0.insert("memberships", values: [.text("ann"), .integer(2)]) }
        _ = try await admin.sync()
        #expect(await events.next() == .poke(revision: 4))
    }

    @Test func aScopedDeviceAppliesItsScopeWithoutARequest() async throws {
        let (server, admin) = try await Self.world()
        let transport = InProcessTransport(server: server, identity: Self.ann)
        let device = SyncClient(store: try Store(.memory, schema: ScopeEndToEndTests.schema, replica: ReplicaID(2)), transport: transport)
        _ = try await device.sync()
        let holdings = try await device.holdings()
        #expect(holdings == ScopeHoldings(["project": .some([1])]))
        let outcomes = await device.startLive(over: transport)
        #expect(await LiveSyncTests.connected(outcomes) == 1)
        #expect(try await LiveSyncTests.eventually { server.live.isIdle })
        let sent = transport.requests
        try await Self.addTask("mine", project: 1, by: admin)
        var applied = false
        for await outcome in outcomes {
            if case .applied(let summary, let revision) = outcome {
                applied = summary.received == 1 && summary.rounds == 0 && revision == 2
                break
            }
        }
        #expect(applied)
        #expect(transport.requests == sent)
        #expect(try await ScopeEndToEndTests.ids(device, "tasks").count == 1)
        #expect(try await device.holdings() == holdings)
        await device.stopLive()
    }

    @Test func aPageForOtherHoldingsIsNotApplied() async throws {
        let (server, _) = try await Self.world()
        let device = try ScopeEndToEndTests.client(server, Self.ann, replica: 2)
        _ = try await device.sync()
        let codec = WireCodec(schema: ScopeEndToEndTests.schema)
        func page(_ scopes: ScopeHoldings?) -> LiveEvent {
            .changes(after: 1, revision: 2, response: codec.encode(SyncResponse(maxRevision: 2, changeSets: [], scopes: scopes)))
        }
        // It holds project 1: a page for a device of projects 1 and 2, or of none, makes it
        // sync; one for project 1 it applies.
        for other in [ScopeHoldings(["project": .some([1, 2])]), ScopeHoldings(["project": .all]), nil] {
            guard case .sync = await device.handle(page(other)) else {
                Issue.record("a page for \(String(describing: other)) was not refused")
                continue
            }
        }
        #expect(await device.withStore { $0.maxRevision } == 1)
        guard case .applied = await device.handle(page(ScopeHoldings(["project": .some([1])]))) else {
            Issue.record("a page for what it holds was not applied")
            return
        }
        #expect(await device.withStore { $0.maxRevision } == 2)
    }

    struct TaskRow: Hashable {
        var id: Int64
        var title: String
        var project: Int64
    }

    /// Tasks as a device or the admin keeps them.
    static func tasks(_ client: SyncClient) async throws -> Set<TaskRow> {
        try await client.read { store in
            Set(try store.database.rows("SELECT id, title, projectID FROM tasks").compactMap { row -> TaskRow? in
                guard case .integer(let id) = row[0], case .text(let title) = row[1], case .integer(let project) = row[2] else { return nil }
                return TaskRow(id: id, title: title, project: project)
            })
        }
    }

    /// Three users' devices in live mode while the admin adds, retitles, moves (out of and
    /// into their projects) and deletes tasks and changes memberships at random: every device
    /// ends holding exactly the tasks of its user's projects, by live mode alone, and pages
    /// carried some of it.
    @Test func scopedDevicesInLiveModeConvergeOnTheirScopes() async throws {
        var live = LiveHub.Options()
        live.minInterval = .milliseconds(20)
        let server = try ScopeEndToEndTests.server(live: live)
        let admin = try ScopeEndToEndTests.client(server, SyncIdentity(user: "root", roles: ["admin"]), replica: 1)
        let users = ["ann": [1, 2], "bob": [2, 3], "cat": [4]] as [String: [Int64]]
        try await admin.write { store in
            // Projects 1 to 4 once synced.
            let ids = try ["One", "Two", "Three", "Four"].map { try store.insert("projects", values: [.text($0)]) }
            for (user, projects) in users.sorted(by: { $0.key < $1.key }) {
                for project in projects { _ = try store.insert("memberships", values: [.text(user), .integer(ids[Int(project) - 1])]) }
            }
        }
        _ = try await admin.sync()
        var devices: [String: SyncClient] = [:]
        let applied = Counter()
        var watchers: [Task<Void, Never>] = []
        for (number, user) in users.keys.sorted().enumerated() {
            let transport = InProcessTransport(server: server, identity: SyncIdentity(user: user))
            let device = SyncClient(
                store: try Store(.memory, schema: ScopeEndToEndTests.schema, replica: ReplicaID(UInt64(10 + number))), transport: transport)
            _ = try await device.sync()
            let outcomes = await device.startLive(over: transport)
            watchers.append(Task {
                for await outcome in outcomes {
                    if case .applied = outcome { applied.add() }
                }
            })
            devices[user] = device
        }
        var random = SplitMix64(seed: 29)
        for step in 0..<80 {
            let known = try await Self.tasks(admin).map(\.id).sorted()
            let roll = Int.random(in: 0..<20, using: &random)
            try await admin.write { store in
                let task = known.isEmpty ? nil : known.randomElement(using: &random)
                let project = Int64.random(in: 1...4, using: &random)
                switch roll {
                case 0..<8, _ where task == nil:
                    _ = try store.insert("tasks", values: [.text("t\(step)"), .integer(project)])
                case 8..<12: _ = try store.update("tasks", id: task!, ["title": .text("r\(step)")])
                case 12..<16: _ = try store.update("tasks", id: task!, ["projectID": .integer(project)])
                case 16..<18: try store.delete("tasks", id: task!)
                default:
                    let user = ["ann", "bob", "cat"].randomElement(using: &random)!
                    _ = try store.insert("memberships", values: [.text(user), .integer(project)])
                }
            }
            _ = try await admin.sync()
            if step % 5 == 0 { try await Task.sleep(for: .milliseconds(30)) }
        }
        // Every device holds its user's projects' tasks as the server has them.
        let memberships = try await admin.read { store in
            try store.database.rows("SELECT userID, projectID FROM memberships").compactMap { row -> (String, Int64)? in
                guard case .text(let user) = row[0], case .integer(let project) = row[1] else { return nil }
                return (user, project)
            }
        }
        let all = try await Self.tasks(admin)
        for (user, device) in devices {
            let projects = Set(memberships.filter { $0.0 == user }.map(\.1))
            let expected = all.filter { projects.contains($0.project) }
            let converged = try await LiveSyncTests.eventually { try await Self.tasks(device) == expected }
            let held = try await Self.tasks(device)
            #expect(converged, "\(user) holds \(held.count) tasks, expected \(expected.count)")
        }
        #expect(applied.value > 0)
        for device in devices.values { await device.stopLive() }
        for watcher in watchers { watcher.cancel() }
    }
}

/// A count several tasks add to.
private final class Counter: Sendable {
    private let count = Atomic<Int>(0)
    func add() { count.add(1, ordering: .relaxed) }
    var value: Int { count.load(ordering: .relaxed) }
}
