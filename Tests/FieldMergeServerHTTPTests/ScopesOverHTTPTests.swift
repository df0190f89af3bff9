import FieldMerge
import FieldMergeJSON
import FieldMergeServer
import FieldMergeServerAuth
import FieldMergeServerSQLite
import Foundation
import Testing

/// Scopes over HTTP as `fieldmerge serve --policy` runs them: the token's subject and roles
/// decide what each device receives (Specs/scopes.md).
@Suite struct ScopesOverHTTPTests {
    static let policy = #"""
        {"default": {"write": ["*"]},
         "scopes": {"project": {"root": "projects", "members": {"memberships": "projectID", "tasks": "projectID"},
           "grants": [{"through": "memberships", "reference": "projectID", "where": {"userID": {"claim": "sub"}}},
                      {"roles": ["admin"]}]}}}
        """#

    @Test func eachTokenReceivesItsProjectsAndIsToldWhatItHolds() async throws {
        let schema = try Schema([
            Entity("projects", fields: [Field("name", .text)]),
            Entity("memberships", fields: [Field("userID", .text), Field("projectID", .reference(to: "projects", onDelete: .cascade))]),
            Entity("tasks", fields: [Field("title", .text), Field("projectID", .reference(to: "projects", onDelete: .cascade))]),
        ])
        let policy = try AccessPolicy.decode(Data(Self.policy.utf8), schema: schema)
        var options = RevisionServer.Options()
        options.scopes = policy.scopes
        options.authorize = policy.authorization
        let seed = #"{"maxRevision":0,"changeSets":[{"types":["projects","memberships","tasks"],"#
            + #""projects":{"create":[-1,-2],"attributes":{"-1":{"name":"Alpha"},"-2":{"name":"Beta"}}},"#
            + #""memberships":{"create":[-1],"attributes":{"-1":{"userID":"ann","projectID":-1}}},"#
            + #""tasks":{"create":[-1,-2],"attributes":{"-1":{"title":"alpha task","projectID":-1},"-2":{"title":"beta task","projectID":-2}}}}]}"#
        try await withAuthenticatedServer(try RevisionServer(.memory, schema: schema, options: options), verifier: try await TestTokens.verifier()) { running in
            let admin = try await RawHTTP.exchange(
                port: running.port, headers: bearer(try await TestTokens.token("root", roles: ["admin"])), body: Array(seed.utf8))
            #expect(admin.status == 200)
            #expect(try JSONValue.parse(Data(admin.body))["scopes"] == .object(["project": .string("*")]))
            let ann = try await RawHTTP.exchange(
                port: running.port, headers: bearer(try await TestTokens.token("ann")), body: Array(#"{"maxRevision":0,"changeSets":[]}"#.utf8))
            let body = String(decoding: ann.body, as: UTF8.self)
            #expect(ann.status == 200)
            #expect(body.contains("alpha task") && body.contains("Alpha"))
            #expect(!body.contains("beta task") && !body.contains("Beta"))
            #expect(try JSONValue.parse(Data(ann.body))["scopes"] == .object(["project": .array([.integer(1)])]))
            // A device claiming to hold project 2 is told to leave it, never sent it.
            let claims = try await RawHTTP.exchange(
                port: running.port, headers: bearer(try await TestTokens.token("ann")),
                body: Array(#"{"maxRevision":1,"scopes":{"project":[1,2]},"changeSets":[]}"#.utf8))
            let leaves = String(decoding: claims.body, as: UTF8.self)
            #expect(!leaves.contains("beta task"))
            guard case .array(let sets)? = try JSONValue.parse(Data(claims.body))["changeSets"], let first = sets.first else {
                Issue.record("no change sets in \(leaves)")
                return
            }
            #expect(first["tasks"]?["leave"] == .array([.integer(2)]))
            #expect(first["projects"]?["leave"] == .array([.integer(2)]))
        }
    }
}
