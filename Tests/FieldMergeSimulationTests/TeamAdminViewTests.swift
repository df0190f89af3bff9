import FieldMerge
import FieldMergeProtocol
import FieldMergeServer
import FieldMergeServerSQLite
@testable import FieldMergeSimulation
import Testing

/// The oracle's view of a server it cannot read with SQL (PostgreSQL in this process, or a
/// server in another process): catch-ups of an admin, from revision 0 or from where the last
/// one ended, must read what the server's tables hold, deletes included.
@Suite struct TeamAdminViewTests {
    static let admin = SyncIdentity(user: "root", roles: [TeamSchema.adminRole])

    static func record(_ id: Int64, _ values: [Value], revision: Int64? = nil) -> WireRecord {
        WireRecord(id: id, present: values.isEmpty ? FieldMask() : FieldMask.all(count: values.count), values: ContiguousArray(values), revision: revision)
    }

    static func write(_ server: RevisionServer, _ changes: [EntityChanges], at revision: Int64, request: String) async throws {
        let request = SyncRequest(maxRevision: revision, changeSets: [ChangeSet(entities: changes)], clientID: "admin", requestID: request)
        _ = try await server.handle(request, identity: admin)
    }

    static func tables(_ server: RevisionServer) async throws -> TeamState {
        try #require(try await server.withSQLite { try TeamState($0, revisions: true) })
    }

    @Test func catchUps_fromZeroOrFromTheLastOne_readWhatTheTablesHold() async throws {
        var options = RevisionServer.Options()
        options.scopes = TeamSchema.rules
        let server = try RevisionServer(.memory, schema: TeamSchema.schema, options: options)
        try await Self.write(server, [
            EntityChanges(entity: "projects", create: [-1, -2], records: [Self.record(-1, [.text("A")]), Self.record(-2, [.text("B")])]),
            EntityChanges(entity: "tasks", create: [-1, -2], records: [
                Self.record(-1, [.text("one"), .integer(-1), .null, .integer(1), .null]),
                Self.record(-2, [.text("two"), .integer(-2), .null, .integer(2), .null]),
            ]),
        ], at: 0, request: "r1")
        var incremental = TeamState.empty
        var holdings: ScopeHoldings?
        try await incremental.catchUp(holdings: &holdings) { try await server.handle($0, identity: Self.admin) }
        let before = try await Self.tables(server)
        #expect(incremental.rows == before.rows && incremental.revisions == before.revisions)
        #expect(before.ids("tasks").count == 2)

        // Delete a task and rename a project; the next catch-up starts where the last ended.
        let task = before.ids("tasks")[0], project = before.ids("projects")[1]
        try await Self.write(server, [
            EntityChanges(entity: "projects", update: [project], records: [
                Self.record(project, [.text("B2")], revision: before.revisions["projects#\(project)"])]),
            EntityChanges(entity: "tasks", delete: [task], records: [
                WireRecord(id: task, present: FieldMask(), values: ContiguousArray(repeating: .null, count: 5), revision: before.revisions["tasks#\(task)"])]),
        ], at: incremental.maxRevision, request: "r2")
        try await incremental.catchUp(holdings: &holdings) { try await server.handle($0, identity: Self.admin) }
        let after = try await Self.tables(server)
        #expect(after.ids("tasks").count == 1 && after.rows["projects"]?[project]?[0] == .text("B2"))
        #expect(incremental.rows == after.rows && incremental.revisions == after.revisions)
        let fromZero = try await TeamState.adminView(of: server)
        #expect(fromZero.rows == after.rows && fromZero.revisions == after.revisions)
    }
}
