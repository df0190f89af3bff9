import FieldMerge
import FieldMergeProtocol
import FieldMergeServer
import FieldMergeServerSQLite
import FieldMergeTestSupport
import Testing

/// Scoped sync on the server (Specs/scopes.md) on SQLite: the scenarios every storage runs
/// (``ScopeScenario``, in FieldMergeTestSupport; FieldMergeServerPostgresTests runs them on
/// PostgreSQL), and the rules' validation.
@Suite struct ScopeServerTests {
    @Test(arguments: ScopeScenario.allCases)
    func scenario(_ scenario: ScopeScenario) async throws {
        try await scenario.run { try RevisionServer(.memory, schema: TeamApp.schema, options: TeamApp.options()) }
    }

    @Test func rulesThatDoNotFitTheSchemaAreRefusedWithTheirPath() throws {
        func problem(_ rules: ScopeRules) -> String? {
            do { try rules.validate(against: TeamApp.schema); return nil } catch { return error.description }
        }
        #expect(problem(TeamApp.rules) == nil)
        #expect(problem(ScopeRules([SyncScope("p", root: "nope", grants: [.roles(["a"])])])) == "scopes.p.root: the schema has no entity 'nope'")
        #expect(problem(ScopeRules([SyncScope("p", root: "projects", members: ["tasks": "title"], grants: [.roles(["a"])])]))
            == "scopes.p.members.tasks: tasks.title is not a reference")
        #expect(problem(ScopeRules([SyncScope("p", root: "projects", members: ["notes": "taskID"], grants: [.roles(["a"])])]))?
            .hasPrefix("scopes.p.members.notes: notes.taskID leads to tasks") == true)
        #expect(problem(ScopeRules([SyncScope("p", root: "projects", grants: [.roots(where: [SyncScope.Condition("ownerID", .claim("team"))])])]))?
            .hasPrefix("scopes.p.grants[0].where.ownerID: unknown claim 'team'") == true)
        #expect(problem(ScopeRules([SyncScope("p", root: "projects", grants: [.roots(where: [SyncScope.Condition("name", .value(.integer(3)))])])]))?
            .hasPrefix("scopes.p.grants[0].where.name:") == true)
        // Memberships reference projects but are left out of the scope: a device could hold
        // a membership whose project it may not.
        #expect(problem(ScopeRules([SyncScope("p", root: "projects", members: ["tasks": "projectID", "notes": "taskID"], grants: [.roles(["a"])])]))?
            .contains("memberships.projectID references projects") == true)
        #expect(throws: ServerError.self) {
            var options = RevisionServer.Options()
            options.scopes = ScopeRules([SyncScope("p", root: "nope", grants: [.roles(["a"])])])
            _ = try RevisionServer(.memory, schema: TeamApp.schema, options: options)
        }
    }
}
