import FieldMerge
import FieldMergeProtocol
import FieldMergeSQLite
import FieldMergeServer
import FieldMergeServerSQLite
import FieldMergeSync
import FieldMergeTestSupport
import Foundation
import Testing

/// Subscriptions from the app's side (Specs/scopes.md §6, Specs/store.md "Subscriptions"):
/// a real store and client over an in-process server of the team app, whose rules let anyone
/// open project "P3" and auditors any project.
@Suite struct SubscriptionClientTests {
    /// The team app's server seeded with three projects (ann a member of 1, bob of 2).
    static func server() async throws -> RevisionServer {
        let server = try RevisionServer(.memory, schema: TeamApp.schema, options: TeamApp.options())
        _ = try await ScopeScenario.seed(server)
        return server
    }

    static func client(_ server: RevisionServer, _ identity: SyncIdentity, wall: ManualWallClock, path: String? = nil) throws -> SyncClient {
        let store = try Store(path.map { .file(path: $0) } ?? .memory, schema: TeamApp.schema, replica: ReplicaID(7), wall: wall)
        return SyncClient(store: store, transport: InProcessTransport(server: server, identity: identity))
    }

    static func projects(_ client: SyncClient) async throws -> [Int64] { try await ids(client, "projects") }

    static func ids(_ client: SyncClient, _ entity: String) async throws -> [Int64] {
        try await client.read { store in
            try store.database.rows("SELECT id FROM \(Database.quote(entity)) ORDER BY id").compactMap { row -> Int64? in
                if case .integer(let id)? = row.first { return id }
                return nil
            }
        }
    }

    @Test func aSubscriptionIsSyncedOrDeniedAndItsRecordsLeaveAfterItsTimeToLive() async throws {
        let server = try await Self.server()
        let wall = ManualWallClock(milliseconds: 1_000_000)
        let ann = try Self.client(server, TeamApp.ann, wall: wall)
        _ = try await ann.sync()
        #expect(try await Self.projects(ann) == [1])

        try await ann.subscribe("project", id: 3, first: true, ttl: .seconds(60))
        try await ann.subscribe("project", id: 2)
        #expect(try await ann.subscriptions().map(\.state) == [.pending, .pending])
        #expect(try await ann.firstSync(of: "project", id: 3) == .synced)
        #expect(try await ann.firstSync(of: "project", id: 2) == .denied)
        #expect(try await Self.projects(ann) == [1, 3])
        #expect(try await Self.ids(ann, "tasks") == [1, 2, 5, 6])

        // Dropped: the records stay for the time to live, then leave with the next sync.
        try await ann.unsubscribe("project", id: 3)
        let dropped = try #require(try await ann.subscriptions().first { $0.root == 3 })
        #expect(dropped.expires == 1_060_000 && dropped.state == .synced)
        _ = try await ann.sync()
        #expect(try await Self.projects(ann) == [1, 3])
        wall.advance(by: 60_000)
        _ = try await ann.sync()
        #expect(try await Self.projects(ann) == [1])
        #expect(try await Self.ids(ann, "tasks") == [1, 2])
        #expect(try await ann.subscriptions().map(\.root) == [2])
        // Nothing was lost: nothing pending, nothing kept aside.
        #expect(try await ann.read { try $0.unsyncedChanges() }.isEmpty)

        // Subscribing again before it expires takes it back.
        try await ann.subscribe("project", id: 3, ttl: .seconds(60))
        try await ann.unsubscribe("project", id: 3)
        try await ann.subscribe("project", id: 3)
        #expect(try await ann.firstSync(of: "project", id: 3) == .synced)
        wall.advance(by: 120_000)
        _ = try await ann.sync()
        #expect(try await Self.projects(ann) == [1, 3])
    }

    @Test func subscriptionsSurviveARestartAndAnEditInsideOneIsSent() async throws {
        let server = try await Self.server()
        let wall = ManualWallClock(milliseconds: 1_000_000)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("fm-subscriptions-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("eve.sqlite").path
        do {
            let eve = try Self.client(server, TeamApp.auditor, wall: wall, path: path)
            try await eve.subscribe("project", id: 2)
        }
        let eve = try Self.client(server, TeamApp.auditor, wall: wall, path: path)
        #expect(try await eve.subscriptions().map(\.root) == [2])
        #expect(try await eve.firstSync(of: "project", id: 2) == .synced)
        #expect(try await Self.projects(eve) == [2])
        try await eve.write { _ = try $0.update("tasks", id: 3, ["title": .text("eve's")]) }
        _ = try await eve.sync()
        #expect(try await eve.read { try $0.unsyncedChanges() }.isEmpty)
        var admin = ScopedDevice(TeamApp.admin)
        try await admin.sync(server)
        #expect(admin.records["tasks#3"]?.values[0] == .text("eve's"))
    }

    @Test func aStoreRefusesASubscriptionWithoutAScopeOrWithANegativeTimeToLive() throws {
        let store = try Store(.memory, schema: TeamApp.schema)
        #expect(throws: StoreError.self) { try store.saveSubscription(StoreSubscription(scope: "", root: 1, ttl: 0)) }
        #expect(throws: StoreError.self) { try store.saveSubscription(StoreSubscription(scope: "project", root: 1, ttl: -1)) }
        #expect(try store.subscriptions().isEmpty)
    }
}
