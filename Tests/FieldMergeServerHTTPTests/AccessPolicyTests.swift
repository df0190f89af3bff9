import FieldMerge
import FieldMergeJSON
import FieldMergeSQLite
import FieldMergeServer
import FieldMergeServerAuth
import FieldMergeServerHTTP
import FieldMergeSync
import FieldMergeSyncHTTP
import Foundation
import Testing

/// Role permissions (`serve --policy`): the document, the decisions, and a refusal over HTTP.
@Suite struct AccessPolicyTests {
    static let document = #"{"entities": {"lists": {"write": ["admin"], "delete": []}}, "default": {"write": ["*"]}}"#

    static func policy(_ json: String = document) throws -> AccessPolicy {
        try AccessPolicy.decode(Data(json.utf8), schema: httpTestSchema())
    }

    @Test func decisions_followTheEntitysRule_elseTheDefault() throws {
        let policy = try Self.policy()
        let admin = SyncIdentity(user: "a", roles: ["admin"]), editor = SyncIdentity(user: "e", roles: ["editor"])
        #expect(policy.allows(.create, of: "lists", by: admin))
        #expect(policy.allows(.update, of: "lists", by: admin))
        #expect(!policy.allows(.delete, of: "lists", by: admin))  // "delete": [] overrides "write"
        #expect(!policy.allows(.create, of: "lists", by: editor))
        #expect(policy.allows(.create, of: "tasks", by: editor))  // the default, "*"
        #expect(policy.allows(.delete, of: "tasks", by: nil))
        // Without a default rule an entity the policy does not name is not writable.
        let strict = try Self.policy(#"{"entities": {"tasks": {"write": ["editor"]}}}"#)
        #expect(strict.allows(.update, of: "tasks", by: editor))
        #expect(!strict.allows(.update, of: "lists", by: admin))
    }

    @Test(arguments: [
        (#"{"entities": {"projects": {"write": ["admin"]}}}"#, "$.entities.projects: the schema has no entity 'projects'"),
        (#"{"entities": {"lists": {"write": "admin"}}}"#, "$.entities.lists.write: expected an array of role names"),
        (#"{"entities": {"lists": {"read": ["admin"]}}}"#, "$.entities.lists.read: unknown key; expected one of create, delete, update, write"),
        (#"{"default": {"create": ["*"]}}"#, "$.default: a rule needs 'write' (an array of roles)"),
        (#"{"entities": {"lists": {"write": [""]}}}"#, "$.entities.lists.write[0]: expected a role name (a non-empty string)"),
        (#"{"entitles": {}}"#, "$.entitles: unknown key; expected one of default, entities"),
    ])
    func badDocuments_sayWhereAndWhat(_ json: String, _ message: String) throws {
        #expect(throws: DocumentError.self) { try Self.policy(json) }
        do { _ = try Self.policy(json) } catch { #expect("\(error)" == message) }
    }

    /// An editor's new list is refused alone; its task goes through; the client keeps the
    /// list aside as `unauthorized`.
    @Test func aRoleThatMayNotWriteAnEntity_isRefusedThatRecordAlone() async throws {
        let schema = try httpTestSchema()
        var options = RevisionServer.Options()
        options.authorize = try Self.policy().authorization
        let server = try RevisionServer(.memory, schema: schema, options: options)
        try await withAuthenticatedServer(server, verifier: try await TestTokens.verifier()) { running in
            let editor = try await TestTokens.token("ed", roles: ["editor"])
            let client = SyncClient(
                store: try Store(.memory, schema: schema, replica: ReplicaID(7)),
                transport: HTTPTransport(url: running.syncURL, token: { _ in editor }))
            try await client.write { store in
                _ = try store.insert("lists", values: ["Forbidden"])
                _ = try store.insert("tasks", values: ["Allowed", false, 0, nil])
            }
            let summary = try await client.sync()
            #expect(summary.refused.map { "\($0.entity)#\($0.id) \($0.code)" } == ["lists#-1 unauthorized"])
            let unsynced = try await client.write { try $0.unsyncedChanges() }
            #expect(unsynced.map { "\($0.entity) \($0.refusal?.code ?? "-")" } == ["lists unauthorized"])
            let rows = try await running.http.withServer { server in
                [try server.database.scalar("SELECT count(*) FROM lists"), try server.database.scalar("SELECT title FROM tasks")]
            }
            #expect(rows == [.integer(0), .text("Allowed")])
        }
    }
}
