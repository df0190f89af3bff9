import FieldMerge
import FieldMergeJSON
import FieldMergeServer
import FieldMergeServerAuth
import Foundation
import JWTKit
import Testing

/// Projects with memberships, tasks and their notes, and users: what the scope rules of a
/// policy document are checked against.
func scopeTestSchema() throws -> Schema {
    func reference(_ name: String, to entity: String) -> Field { Field(name, .reference(to: entity, onDelete: .cascade)) }
    return try Schema([
        Entity("projects", fields: [Field("name", .text), Field("ownerID", .text), Field("archived", .bool)]),
        Entity("memberships", fields: [Field("userID", .text), reference("projectID", to: "projects")]),
        Entity("tasks", fields: [reference("projectID", to: "projects"), Field("title", .text)]),
        Entity("notes", fields: [reference("taskID", to: "tasks"), Field("body", .text)]),
        Entity("users", fields: [Field("name", .text)]),
    ])
}

/// The policy document's `scopes` and `claims` (Specs/http.md §7), and the custom claims of
/// tokens that their rules name.
@Suite struct ScopePolicyTests {
    static let example = #"""
        {"entities": {"projects": {"write": ["admin"]}}, "default": {"write": ["*"]},
         "claims": ["teams"],
         "scopes": {
           "project": {
             "root": "projects",
             "members": {"tasks": "projectID", "notes": "taskID", "memberships": "projectID"},
             "grants": [
               {"through": "memberships", "reference": "projectID", "where": {"userID": {"claim": "sub"}}},
               {"where": {"ownerID": {"claim": "sub"}, "archived": false}},
               {"roles": ["admin"]},
               {"claim": "teams"},
               {"subscribe": {"where": {"archived": true}}},
               {"subscribe": {"roles": ["auditor"]}}
             ]}}}
        """#

    static func policy(_ json: String) throws -> AccessPolicy {
        try AccessPolicy.decode(Data(json.utf8), schema: scopeTestSchema())
    }

    @Test func theExample_readsAsScopeRules() throws {
        let policy = try Self.policy(Self.example)
        let expected = ScopeRules(
            [
                SyncScope(
                    "project", root: "projects", members: ["tasks": "projectID", "notes": "taskID", "memberships": "projectID"],
                    grants: [
                        .through(entity: "memberships", reference: "projectID", where: [SyncScope.Condition("userID", .claim("sub"))]),
                        // A where's conditions in the order of their fields.
                        .roots(where: [SyncScope.Condition("archived", .value(.bool(false))), SyncScope.Condition("ownerID", .claim("sub"))]),
                        .roles(["admin"]),
                        .claim("teams"),
                        .subscribe(where: [SyncScope.Condition("archived", .value(.bool(true)))]),
                        .subscribe(roles: ["auditor"]),
                    ])
            ], claims: ["teams"])
        #expect(policy.scopes == expected)
        #expect(policy.entities["projects"] == AccessPolicy.Rule(write: ["admin"]))
        #expect(policy.defaultRule == AccessPolicy.Rule(write: ["*"]))
        // Without "scopes" there are none.
        #expect(try Self.policy(#"{"default": {"write": ["*"]}}"#).scopes == nil)
    }

    /// Specs/http.md's example under "Scopes." says the same.
    @Test func theSpecsExample_readsAsTheSameRules() throws {
        let lines = try DocSnippets.lines("Specs/http.md")
        let heading = try #require(lines.firstIndex { $0.hasPrefix("**Scopes.**") })
        let open = try #require(lines[heading...].firstIndex(of: "```json"))
        let close = try #require(lines[(open + 1)...].firstIndex(of: "```"))
        let scopes = try Self.policy(lines[(open + 1)..<close].joined(separator: "\n")).scopes
        #expect(scopes != nil)
        #expect(try scopes == Self.policy(Self.example).scopes)
    }

    @Test func scopes_comeInTheOrderOfTheirNames_andLiteralsKeepTheirType() throws {
        let policy = try Self.policy(#"""
            {"scopes": {
              "project": {"root": "projects", "members": {"tasks": "projectID", "notes": "taskID", "memberships": "projectID"},
                          "grants": [{"where": {"name": "Inbox", "id": 7}}]},
              "people": {"root": "users", "grants": [{"where": {"id": {"claim": "sub"}}}]}}}
            """#)
        #expect(policy.scopes?.scopes.map(\.name) == ["people", "project"])
        #expect(policy.scopes?.scopes.last?.grants == [
            .roots(where: [SyncScope.Condition("id", .value(.integer(7))), SyncScope.Condition("name", .value(.text("Inbox")))])
        ])
        #expect(policy.scopes?.claims == [])
    }

    /// The members and grants of a valid scope of projects, for the cases that break one part.
    static let members = #"{"tasks": "projectID", "notes": "taskID", "memberships": "projectID"}"#
    static let grants = #"[{"roles": ["admin"]}]"#

    /// A document with the one scope `p`.
    static func scope(root: String = "projects", members: String = members, grants: String = grants) -> String {
        #"{"claims": ["teams"], "scopes": {"p": {"root": "\#(root)", "members": \#(members), "grants": \#(grants)}}}"#
    }

    static let badDocuments: [(String, String)] = [
        // The document's shape.
        (#"{"scopes": {"p": {"root": "projects", "grant": []}}}"#, "$.scopes.p.grant: unknown key; expected one of grants, members, root"),
        (#"{"scopes": {"p": {"members": {}, "grants": []}}}"#, "$.scopes.p.root: expected the root entity's name (a non-empty string)"),
        (#"{"scopes": {"p": {"root": "projects"}}}"#, "$.scopes.p.grants: expected an array of grants"),
        (#"{"scopes": []}"#, "$.scopes: expected an object"),
        (#"{"claims": ["teams"]}"#, "$.claims: custom claims are for scope rules, and the policy has no 'scopes'"),
        (#"{"claims": [3], "scopes": {}}"#, "$.claims[0]: expected a claim name (a non-empty string)"),
        (#"{"claims": ["sub"], "scopes": {}}"#,
         "$.claims: 'sub' is not a custom claim (sub, tenant and roles are built in; exp, nbf, iat, iss, aud and jti are the token's own)"),
        (scope(grants: #"[{"roles": ["admin"], "claim": "teams"}]"#),
         "$.scopes.p.grants[0]: a grant has exactly one of the shapes {through, reference, where}, {where}, {roles}, {claim} and {subscribe}; this one has claim, roles"),
        (scope(grants: #"[{"through": "memberships", "where": {"userID": {"claim": "sub"}}}]"#),
         "$.scopes.p.grants[0]: a grant has exactly one of the shapes {through, reference, where}, {where}, {roles}, {claim} and {subscribe}; this one has through, where"),
        (scope(grants: #"[{}]"#),
         "$.scopes.p.grants[0]: a grant has exactly one of the shapes {through, reference, where}, {where}, {roles}, {claim} and {subscribe}; this one has none"),
        (scope(grants: #"[{"roles": ["admin"], "who": 1}]"#),
         "$.scopes.p.grants[0].who: unknown key; expected one of claim, reference, roles, subscribe, through, where"),
        (scope(grants: #"[{"subscribe": {"where": {"archived": true}, "who": 1}}]"#),
         "$.scopes.p.grants[0].subscribe.who: unknown key; expected one of roles, where"),
        (scope(grants: #"[{"subscribe": true}]"#), "$.scopes.p.grants[0].subscribe: expected an object"),
        (scope(grants: #"[{"subscribe": {"where": {"state": "open"}}}]"#),
         "$.scopes.p.grants[0].subscribe.where.state: projects has no field 'state'"),
        (scope(grants: #"[{"subscribe": {"roles": []}}]"#), "$.scopes.p.grants[0].subscribe.roles: expected role names"),
        (scope(grants: #"[{"where": {"ownerID": {"claim": "sub", "or": "x"}}}]"#),
         "$.scopes.p.grants[0].where.ownerID.or: unknown key; expected one of claim"),
        (scope(grants: #"[{"where": {"archived": null}}]"#),
         #"$.scopes.p.grants[0].where.archived: expected {"claim": name}, an integer, a string or a bool"#),
        (scope(grants: #"[{"where": {"name": 1.5}}]"#),
         #"$.scopes.p.grants[0].where.name: expected {"claim": name}, an integer, a string or a bool"#),
        (scope(members: #"{"tasks": 3}"#), "$.scopes.p.members.tasks: expected the name of the member's reference toward the root (a non-empty string)"),
        // Against the schema (ScopeRules.validate).
        (scope(root: "folders"), "$.scopes.p.root: the schema has no entity 'folders'"),
        (scope(members: #"{"tasks": "projectID", "notes": "taskID", "memberships": "projectID", "comments": "taskID"}"#),
         "$.scopes.p.members.comments: the schema has no entity 'comments'"),
        (scope(grants: #"[{"through": "teams", "reference": "projectID", "where": {"userID": {"claim": "sub"}}}]"#),
         "$.scopes.p.grants[0].through: the schema has no entity 'teams'"),
        (scope(members: #"{"tasks": "projectId", "notes": "taskID", "memberships": "projectID"}"#),
         "$.scopes.p.members.tasks: tasks has no field 'projectId'"),
        (scope(grants: #"[{"where": {"owner": {"claim": "sub"}}}]"#), "$.scopes.p.grants[0].where.owner: projects has no field 'owner'"),
        (scope(grants: #"[{"through": "memberships", "reference": "project", "where": {"userID": {"claim": "sub"}}}]"#),
         "$.scopes.p.grants[0].reference: memberships has no field 'project'"),
        (scope(grants: #"[{"through": "memberships", "reference": "userID", "where": {"userID": {"claim": "sub"}}}]"#),
         "$.scopes.p.grants[0].reference: memberships.userID is not a reference to the root projects"),
        (scope(members: #"{"tasks": "title", "notes": "taskID", "memberships": "projectID"}"#),
         "$.scopes.p.members.tasks: tasks.title is not a reference"),
        (scope(members: #"{"notes": "taskID", "memberships": "projectID"}"#),
         "$.scopes.p.members.notes: notes.taskID leads to tasks, which is neither the root nor a member of 'p'"),
        (#"""
         {"scopes": {"b": {"root": "users", "members": {"tasks": "projectID"}, "grants": [{"roles": ["admin"]}]},
                     "a": {"root": "projects", "members": {"tasks": "projectID", "notes": "taskID", "memberships": "projectID"},
                           "grants": [{"roles": ["admin"]}]}}}
         """#, "$.scopes.b.members.tasks: tasks is in another scope already (an entity belongs to one scope at most)"),
        (scope(grants: #"[{"where": {"archived": "no"}}]"#), #"$.scopes.p.grants[0].where.archived: "no" is not a value of projects.archived"#),
        (scope(grants: #"[{"where": {"ownerID": 3}}]"#), "$.scopes.p.grants[0].where.ownerID: 3 is not a value of projects.ownerID"),
        (scope(grants: #"[{"where": {"ownerID": {"claim": "team"}}}]"#),
         "$.scopes.p.grants[0].where.ownerID: unknown claim 'team'; the built-in claims are sub, tenant and roles, and custom claims must be declared in 'claims'"),
        (scope(grants: #"[{"claim": "groups"}]"#), "$.scopes.p.grants[0].claim: unknown claim 'groups'; declare custom claims in 'claims'"),
        (scope(grants: "[]"), "$.scopes.p.grants: a scope needs at least one grant (else nobody holds its records)"),
        (scope(grants: #"[{"roles": []}]"#), "$.scopes.p.grants[0].roles: expected role names"),
        (scope(grants: #"[{"where": {}}]"#), "$.scopes.p.grants[0].where: a grant by the root's fields needs at least one condition"),
        (scope(members: #"{"tasks": "projectID", "notes": "taskID"}"#),
         "$.scopes.p: memberships.projectID references projects (scope 'p') but is not the reference that puts memberships in that scope: "
            + "a device could hold a memberships record whose projects it may not"),
    ]

    @Test(arguments: badDocuments)
    func badScopes_sayWhereAndWhat(_ json: String, _ message: String) throws {
        #expect(throws: DocumentError.self) { try Self.policy(json) }
        do { _ = try Self.policy(json) } catch { #expect("\(error)" == message) }
    }

    // MARK: Custom claims in tokens

    static let verifier = TokenVerifier.Requirements(customClaims: ["teams", "groups", "level", "absent"])

    static func token(_ custom: [String: JSONValue]) async throws -> String {
        var claims: [String: JSONValue] = ["sub": .string("ann"), "exp": .integer(Int64(Date().timeIntervalSince1970) + 3600)]
        claims.merge(custom) { $1 }
        return try await TestTokens.sign(RawClaims(claims: claims))
    }

    @Test func declaredClaims_reachTheIdentity_asText() async throws {
        let token = try await Self.token([
            "teams": .string("t1"), "groups": .array([.string("g1"), .integer(7)]), "level": .integer(3),
            "other": .string("not declared"), "iat": .integer(1),
        ])
        let identity = try await TestTokens.verifier(Self.verifier).identity(of: token)
        #expect(identity.claims == ["teams": ["t1"], "groups": ["g1", "7"], "level": ["3"]])
        #expect(identity.values(ofClaim: "groups") == ["g1", "7"])
        #expect(identity.values(ofClaim: "absent") == [])
        // A verifier told of no custom claims keeps none.
        #expect(try await TestTokens.verifier().identity(of: token).claims == [:])
    }

    @Test func syncTokenClaims_signsCustomClaims_asArraysOfStrings() async throws {
        let claims = SyncTokenClaims(user: "ann", expires: Date(timeIntervalSinceNow: 3600), custom: ["teams": ["t1", "t2"], "other": ["x"]])
        let identity = try await TestTokens.verifier(Self.verifier).identity(of: try await TestTokens.sign(claims))
        #expect(identity.claims == ["teams": ["t1", "t2"]])
    }

    @Test(arguments: [
        JSONValue.object(["id": .string("t1")]), .array([.string("t1"), .bool(true)]), .bool(true), .number(1.5), .null,
    ])
    func aDeclaredClaimOfAnotherShape_isRefusedByName(_ value: JSONValue) async throws {
        let token = try await Self.token(["teams": value])
        await #expect(throws: AuthenticationFailure(
            "the token's 'teams' claim is malformed (a string, an integer or an array of strings and integers)")) {
            try await TestTokens.verifier(Self.verifier).identity(of: token)
        }
        // Not declared, it is ignored.
        #expect(try await TestTokens.verifier().identity(of: token).user == "ann")
    }
}

/// A token's payload as any JSON object, to sign claims of every shape.
struct RawClaims: JWTPayload {
    var claims: [String: JSONValue]

    init(claims: [String: JSONValue]) { self.claims = claims }
    init(from decoder: any Decoder) throws { claims = try [String: JSONValue](from: decoder) }
    func encode(to encoder: any Encoder) throws { try claims.encode(to: encoder) }
    func verify(using algorithm: some JWTAlgorithm) async throws {}
}
