import FieldMerge
import FieldMergeProtocol
import FieldMergeSQLite
import FieldMergeServer
import FieldMergeServerSQLite
import FieldMergeSync
import FieldMergeTestSupport
import Foundation
import Testing

/// Scoped sync from the app's side: real stores and clients over an in-process server with
/// scopes (Specs/scopes.md).
@Suite struct ScopeEndToEndTests {
    static let schema = try! Schema([
        Entity("projects", fields: [Field("name", .text)]),
        Entity("memberships", fields: [Field("userID", .text), Field("projectID", .reference(to: "projects", onDelete: .cascade))]),
        Entity("tasks", fields: [Field("title", .text), Field("projectID", .reference(to: "projects", onDelete: .cascade))]),
    ])

    static func server(live: LiveHub.Options = LiveHub.Options()) throws -> RevisionServer {
        var options = RevisionServer.Options()
        options.live = live
        options.scopes = ScopeRules([SyncScope(
            "project", root: "projects", members: ["memberships": "projectID", "tasks": "projectID"],
            grants: [
                .through(entity: "memberships", reference: "projectID", where: [SyncScope.Condition("userID", .claim("sub"))]),
                .roles(["admin"]),
            ])])
        return try RevisionServer(.memory, schema: schema, options: options)
    }

    static func client(_ server: RevisionServer, _ identity: SyncIdentity, replica: UInt64) throws -> SyncClient {
        SyncClient(
            store: try Store(.memory, schema: schema, replica: ReplicaID(replica)),
            transport: InProcessTransport(server: server, identity: identity))
    }

    static func ids(_ client: SyncClient, _ entity: String) async throws -> [Int64] {
        try await client.read { store in
            try store.database.rows("SELECT id FROM \(Database.quote(entity)) ORDER BY id").compactMap { row -> Int64? in
                if case .integer(let id)? = row.first { return id }
                return nil
            }
        }
    }

    /// Projects One and Two, ann a member of those `annIn`, a task "a" in One and (with
    /// `taskInTwo`) "b" in Two; the admin's and ann's devices, both synced.
    static func twoProjects(annIn: [Int64], taskInTwo: Bool) async throws -> (admin: SyncClient, ann: SyncClient) {
        let server = try Self.server()
        let admin = try Self.client(server, SyncIdentity(user: "root", roles: ["admin"]), replica: 1)
        let ann = try Self.client(server, SyncIdentity(user: "ann"), replica: 2)
        try await admin.write { store in
            let projects = [try store.insert("projects", values: [.text("One")]), try store.insert("projects", values: [.text("Two")])]
            for project in annIn { _ = try store.insert("memberships", values: [.text("ann"), .integer(projects[Int(project) - 1])]) }
            _ = try store.insert("tasks", values: [.text("a"), .integer(projects[0])])
            if taskInTwo { _ = try store.insert("tasks", values: [.text("b"), .integer(projects[1])]) }
        }
        _ = try await admin.sync()
        _ = try await ann.sync()
        return (admin, ann)
    }

    @Test func aUserJoinsLeavesAndKeepsItsUnsyncedEditAside() async throws {
        let (admin, ann) = try await Self.twoProjects(annIn: [1], taskInTwo: true)
        #expect(try await Self.ids(ann, "projects") == [1])
        #expect(try await Self.ids(ann, "tasks") == [1])

        // Ann edits task 1 offline; meanwhile she is taken off project 1 and put on project 2.
        _ = try await ann.write { try $0.update("tasks", id: 1, ["title": .text("ann's edit")]) }
        try await admin.write { store in
            try store.delete("memberships", id: 1)
            _ = try store.insert("memberships", values: [.text("ann"), .integer(2)])
        }
        _ = try await admin.sync()
        _ = try await ann.sync()
        _ = try await ann.sync()
        #expect(try await Self.ids(ann, "projects") == [2])
        #expect(try await Self.ids(ann, "tasks") == [2])
        let aside = try await ann.read { try $0.unsyncedChanges() }
        #expect(aside.map(\.entity) == ["tasks"] && aside.map(\.id) == [1])
        #expect(aside.first?.refusal?.code == "outOfScope")
        // The server kept its version; the admin still has both tasks.
        _ = try await admin.sync()
        let title = try await admin.read { try $0.record("tasks", id: 1)?.values[0] }
        #expect(title == .text("a"))
        // Given up, it is gone for good, and nothing more is sent.
        try await ann.write { try $0.discard("tasks", id: 1) }
        #expect(try await ann.read { try $0.unsyncedChanges() }.isEmpty)
        let quiet = try await ann.sync()
        #expect(quiet.sent == 0)
    }

    /// Ann moves a task, offline, into a project she then loses. The server refuses the move
    /// and keeps the task in the project she still holds: her device goes back to the
    /// server's version and keeps the move aside, rather than dropping a task it should hold.
    @Test func aTaskMovedIntoAProjectThatLeavesGoesBackToTheServersVersion() async throws {
        let (admin, ann) = try await Self.twoProjects(annIn: [1, 2], taskInTwo: false)
        _ = try await ann.write { try $0.update("tasks", id: 1, ["projectID": .integer(2)]) }
        try await admin.write { try $0.delete("memberships", id: 2) }
        _ = try await admin.sync()
        _ = try await ann.sync()
        #expect(try await Self.ids(ann, "projects") == [1])
        #expect(try await Self.ids(ann, "tasks") == [1])
        let project = try await ann.read { try $0.record("tasks", id: 1)?.values[1] }
        #expect(project == .integer(1))
        let aside = try await ann.read { try $0.unsyncedChanges() }
        #expect(aside.map(\.id) == [1] && aside.first?.refusal?.code == "outOfScope")
        try await ann.write { try $0.discard("tasks", id: 1) }
        _ = try await ann.sync()
        #expect(try await Self.ids(ann, "tasks") == [1])
    }

    /// Ann moves a task, offline, between two projects that both leave: the server lists the
    /// task too, and her device drops it (its move kept aside) instead of failing every sync.
    @Test func aTaskMovedBetweenTwoProjectsThatBothLeaveGoes() async throws {
        let (admin, ann) = try await Self.twoProjects(annIn: [1, 2], taskInTwo: false)
        _ = try await ann.write { try $0.update("tasks", id: 1, ["projectID": .integer(2)]) }
        try await admin.write { store in
            try store.delete("memberships", id: 1)
            try store.delete("memberships", id: 2)
        }
        _ = try await admin.sync()
        _ = try await ann.sync()
        #expect(try await Self.ids(ann, "projects").isEmpty)
        #expect(try await Self.ids(ann, "tasks").isEmpty)
        let aside = try await ann.read { try $0.unsyncedChanges() }
        #expect(aside.map(\.id) == [1] && aside.first?.refusal?.code == "outOfScope")
    }

    /// One offline session moves a task to another project and edits its child: the move
    /// takes the child along (a new revision), and the edit naming the child's revision from
    /// before is no conflict.
    @Test func aMoveAndAnEditOfItsChildInOneChangeSetBothCommit() async throws {
        let schema = try Schema([
            Entity("projects", fields: [Field("name", .text)]),
            Entity("tasks", fields: [Field("title", .text), Field("projectID", .reference(to: "projects", onDelete: .setNull))]),
            Entity("comments", fields: [Field("body", .text), Field("taskID", .reference(to: "tasks", onDelete: .cascade))]),
        ])
        var options = RevisionServer.Options()
        options.scopes = ScopeRules([SyncScope(
            "project", root: "projects", members: ["tasks": "projectID", "comments": "taskID"], grants: [.roles(["admin"])])])
        let server = try RevisionServer(.memory, schema: schema, options: options)
        let admin = SyncClient(
            store: try Store(.memory, schema: schema, replica: ReplicaID(1)),
            transport: InProcessTransport(server: server, identity: SyncIdentity(user: "root", roles: ["admin"])))
        try await admin.write { store in
            let one = try store.insert("projects", values: [.text("One")])
            _ = try store.insert("projects", values: [.text("Two")])
            let task = try store.insert("tasks", values: [.text("a"), .integer(one)])
            _ = try store.insert("comments", values: [.text("c"), .integer(task)])
        }
        _ = try await admin.sync()
        try await admin.write { store in
            _ = try store.update("tasks", id: 1, ["projectID": .integer(2)])
            _ = try store.update("comments", id: 1, ["body": .text("edited")])
        }
        let summary = try await admin.sync()
        #expect(summary.conflictingChangeSets == 0)
        #expect(try await admin.read { try $0.unsyncedChanges() }.isEmpty)
        let other = SyncClient(
            store: try Store(.memory, schema: schema, replica: ReplicaID(2)),
            transport: InProcessTransport(server: server, identity: SyncIdentity(user: "root2", roles: ["admin"])))
        _ = try await other.sync()
        #expect(try await other.read { try $0.record("comments", id: 1)?.values[0] } == .text("edited"))
    }

    /// A task moves away from ann's project and is deleted there; ann's device then syncs as
    /// an admin (every root gained): the task's departure is found although it is gone, and
    /// her device drops it.
    @Test func aTaskMovedAwayAndDeletedLeavesADeviceThatGainsEveryRoot() async throws {
        let server = try RevisionServer(.memory, schema: TeamApp.schema, options: TeamApp.options())
        var admin = ScopedDevice(TeamApp.admin)
        try await admin.sync(server, sending: [Send.changeSet(
            Send.create("projects", -1, [.text("One"), .null]), Send.create("projects", -2, [.text("Two"), .null]),
            Send.create("memberships", -1, [.text("ann"), .integer(-1)]),
            Send.create("tasks", -1, [.text("a"), .integer(-1)]))])
        var ann = ScopedDevice(TeamApp.ann)
        try await ann.sync(server)
        #expect(ann.ids("tasks") == [1])
        try await admin.sync(server, sending: [Send.changeSet(Send.update("tasks", 1, revision: 1, field: 1, .integer(2), width: 2))])
        try await admin.sync(server, sending: [Send.changeSet(Send.delete("tasks", 1, revision: 2, width: 2))])
        var promoted = ScopedDevice(SyncIdentity(user: "ann", roles: ["admin"]))
        (promoted.maxRevision, promoted.scopes, promoted.records) = (ann.maxRevision, ann.scopes, ann.records)
        try await promoted.sync(server)
        #expect(promoted.ids("tasks").isEmpty)
        #expect(promoted.ids("projects") == [1, 2])
        #expect(promoted.scopes == ScopeHoldings(["project": .all]))
    }
}
