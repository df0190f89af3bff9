import FieldMerge
import FieldMergeProtocol
import FieldMergeSQLite
@testable import FieldMergeServer
import FieldMergeServerSQLite
@testable import FieldMergeSync
import FieldMergeTestSupport
import Testing

/// Live mode and subscriptions (Specs/scopes.md §6, Specs/live.md): a device is told of
/// changes under the roots it subscribes to that its grants allow, and its channel follows
/// its subscriptions as they change.
@Suite struct LiveSubscriptionTests {
    /// Admin's edit of task `id` (title), synced.
    static func retitle(_ admin: inout ScopedDevice, task id: Int64, _ title: String, on server: RevisionServer) async throws {
        try await admin.sync(server)
        let task = try #require(admin.records["tasks#\(id)"])
        try await admin.sync(server, sending: [Send.changeSet(Send.update("tasks", id, revision: task.revision!, field: 0, .text(title), width: 2))])
    }

    @Test func aSubscriberIsPokedForItsSubscribedRootsThatItsGrantsAllow() async throws {
        let server = try RevisionServer(.memory, schema: TeamApp.schema, options: TeamApp.options())
        var admin = try await ScopeScenario.seed(server)
        // Ann subscribes to project 3 (allowed) and 2 (bob's, not allowed).
        var events = try server.live.subscribe(identity: TeamApp.ann, subscriptions: ScopeHoldings(["project": .ids([2, 3])]))
            .makeAsyncIterator()
        #expect(await events.next() == .ready(revision: 1))
        #expect(try await LiveSyncTests.eventually { server.live.isIdle })
        try await Self.retitle(&admin, task: 3, "bob's project", on: server)
        #expect(try await LiveSyncTests.eventually { server.live.revision == 2 && server.live.isIdle })
        try await Self.retitle(&admin, task: 5, "the archive", on: server)
        // Nothing for revision 2 (project 2, denied); a poke for revision 3 (project 3).
        #expect(await events.next() == .poke(revision: 3))
    }

    @Test func aDeviceInLiveModeFollowsTheRootsItSubscribesTo() async throws {
        let server = try RevisionServer(.memory, schema: TeamApp.schema, options: TeamApp.options())
        var admin = try await ScopeScenario.seed(server)
        let wall = ManualWallClock(milliseconds: 1_000_000)
        let ann = try SubscriptionClientTests.client(server, TeamApp.ann, wall: wall)
        _ = try await ann.sync()
        let outcomes = await ann.startLive(over: InProcessTransport(server: server, identity: TeamApp.ann))
        _ = await LiveSyncTests.connected(outcomes)

        // Subscribing while live: the channel opens again with it, and a sync brings it.
        try await ann.subscribe("project", id: 3)
        #expect(try await LiveSyncTests.eventually { try await SubscriptionClientTests.projects(ann) == [1, 3] })
        #expect(try await LiveSyncTests.eventually {
            let state = try await ann.subscriptions().first?.state
            return server.live.isIdle && state == .synced
        })

        // The admin's edit in the archive reaches her without a sync of hers.
        try await Self.retitle(&admin, task: 5, "seen live", on: server)
        let title = { () async throws -> SQLValue? in
            try await ann.read { try $0.database.rows("SELECT title FROM tasks WHERE id = 5").first?.first }
        }
        #expect(try await LiveSyncTests.eventually { try await title() == .text("seen live") })

        // Dropped with no time to live: it leaves at once.
        try await ann.subscribe("project", id: 3, ttl: .zero)
        try await ann.unsubscribe("project", id: 3)
        #expect(try await LiveSyncTests.eventually { try await SubscriptionClientTests.projects(ann) == [1] })
        await ann.stopLive()
    }
}
