import FieldMerge
import FieldMergeJSON
import FieldMergeSQLite
import FieldMergeServer
import FieldMergeServerSQLite
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
        (#"{"entities": {"lists": {"reed": ["admin"]}}}"#, "$.entities.lists.reed: unknown key; expected one of create, delete, read, update, write"),
        (#"{"entities": {"lists": {"write": ["*"], "read": ["admin"]}}, "default": {"write": ["*"]}}"#,
         "$: tasks is readable by everyone, but its reference listID points at lists, which they may not read"),
        (#"{"entities": {"lists": {"write": ["*"], "read": ["admin"]}, "tasks": {"write": ["*"], "read": ["admin", "guest"]}}}"#,
         "$: tasks is readable by role(s) guest, but its reference listID points at lists, which they may not read"),
        (#"{"default": {"create": ["*"]}}"#, "$.default: a rule needs 'write' (an array of roles)"),
        (#"{"entities": {"lists": {"write": [""]}}}"#, "$.entities.lists.write[0]: expected a role name (a non-empty string)"),
        (#"{"entitles": {}}"#, "$.entitles: unknown key; expected one of claims, default, entities, scopes"),
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

    /// `read`: a guest never receives the lists (catch-up or answers), may not write them,
    /// and its store holds only what it may read; an admin receives everything.
    @Test func aRoleThatMayNotReadAnEntity_neverReceivesIt() async throws {
        let schema = try Schema([
            Entity("lists", fields: [Field("name", .text)]),
            Entity("notes", fields: [Field("body", .text)]),
        ])
        let policy = try AccessPolicy.decode(
            Data(#"{"entities": {"notes": {"write": ["admin"], "read": ["admin"]}}, "default": {"write": ["*"]}}"#.utf8), schema: schema)
        #expect(policy.readFilter != nil)
        var options = RevisionServer.Options()
        options.enforce(policy)  // write and read rules in one call
        let server = try RevisionServer(.memory, schema: schema, options: options)
        try await withAuthenticatedServer(server, verifier: try await TestTokens.verifier()) { running in
            func client(_ user: String, _ roles: [String], _ replica: UInt64) async throws -> SyncClient {
                let token = try await TestTokens.token(user, roles: roles)
                return SyncClient(
                    store: try Store(.memory, schema: schema, replica: ReplicaID(replica)),
                    transport: HTTPTransport(url: running.syncURL, token: { _ in token }))
            }
            let admin = try await client("ada", ["admin"], 1), guest = try await client("gus", ["guest"], 2)
            try await admin.write { store in
                _ = try store.insert("lists", values: ["Home"])
                _ = try store.insert("notes", values: ["salary review"])
            }
            _ = try await admin.sync()
            _ = try await guest.sync()
            #expect(try await guest.read { try $0.database.scalar("SELECT count(*) FROM lists") } == .integer(1))
            #expect(try await guest.read { try $0.database.scalar("SELECT count(*) FROM notes") } == .integer(0))
            try await guest.write { store in _ = try store.insert("notes", values: ["peek"]) }
            let summary = try await guest.sync()
            #expect(summary.refused.map { "\($0.entity)#\($0.id) \($0.code)" } == ["notes#-1 unauthorized"])  // its own record: kept aside
            #expect(try await running.http.withServer { try $0.database.scalar("SELECT count(*) FROM notes") } == .integer(1))
            try await admin.write { store in _ = try store.update("notes", id: 1, ["body": "raise"]) }
            _ = try await admin.sync()
            _ = try await guest.sync()
            #expect(try await guest.read { try $0.database.scalar("SELECT count(*) FROM notes WHERE body = 'salary review' OR body = 'raise'") } == .integer(0))
            #expect(try await admin.read { try $0.record("notes", id: 1)?.values } == ["raise"])
        }
        #expect(!policy.allows(.create, of: "notes", by: SyncIdentity(user: "g", roles: ["guest"])))
    }
}
