import FieldMergeJSON
import FieldMergeServer
import FieldMergeServerSQLite
import FieldMergeServerAuth
import FieldMergeServerHTTP
import Foundation
import Testing

/// The token decides the tenant and owns the stored replies.
@Suite struct TokenTenantTests {
    static let catchUp = Array(#"{"maxRevision":0,"changeSets":[]}"#.utf8)

    /// A create of a list named `name`, as client `client`'s request `request`.
    static func createList(_ name: String, client: String, request: String) -> [UInt8] {
        Array(#"{"maxRevision":0,"clientID":"\#(client)","requestID":"\#(request)","changeSets":[{"types":["lists"],"lists":{"create":[-1],"update":[],"delete":[],"attributes":{"-1":{"name":"\#(name)"}}}}]}"#.utf8)
    }

    @Test func theTokensTenant_choosesTheDataSet() async throws {
        let schema = try httpTestSchema()
        let tenants = TenantDirectory { _ in try RevisionServer(.memory, schema: schema) }
        let verifier = try await TestTokens.verifier()
        try await withTenantServer(tenants, schema: schema, verifier: verifier) { running in
            let ann = try await TestTokens.token("ann", tenant: "acme")
            let created = try await RawHTTP.exchange(port: running.port, headers: bearer(ann), body: Self.createList("Home", client: "a", request: "1"))
            #expect(created.status == 200)
            let bob = try await RawHTTP.exchange(port: running.port, headers: bearer(try await TestTokens.token("bob", tenant: "acme")), body: Self.catchUp)
            let eve = try await RawHTTP.exchange(port: running.port, headers: bearer(try await TestTokens.token("eve", tenant: "globex")), body: Self.catchUp)
            #expect(String(decoding: bob.body, as: UTF8.self).contains("Home"))
            #expect(eve.status == 200)
            #expect(!String(decoding: eve.body, as: UTF8.self).contains("Home"))
            #expect(try JSONValue.parse(Data(eve.body))["maxRevision"] == .integer(0))

            // A valid token that names no tenant reaches no data set.
            let noTenant = try await RawHTTP.exchange(port: running.port, headers: bearer(try await TestTokens.token("zed")), body: Self.catchUp)
            #expect(noTenant.status == 403)
            #expect(try JSONValue.parse(Data(noTenant.body))["error"] == .string("forbidden"))
            // Nor does a request without a token: 401 before any tenant is opened for it.
            let anonymous = try await RawHTTP.exchange(port: running.port, body: Self.catchUp)
            #expect(anonymous.status == 401)
            #expect(await tenants.openTenants == ["acme", "globex"])
        }
    }

    @Test func storedReplies_belongToTheTokensUser() async throws {
        try await withAuthenticatedServer(try RevisionServer(.memory, schema: httpTestSchema()), verifier: try await TestTokens.verifier()) { running in
            func send(_ user: String, _ body: [UInt8]) async throws -> JSONValue {
                let response = try await RawHTTP.exchange(port: running.port, headers: bearer(try await TestTokens.token(user)), body: body)
                #expect(response.status == 200)
                return try JSONValue.parse(Data(response.body))
            }
            let first = try await send("ann", Self.createList("Ann's", client: "phone", request: "r1"))
            #expect(first["maxRevision"] == .integer(1))
            // Ann's retry is answered from the stored reply: nothing new is written.
            #expect(try await send("ann", Self.createList("Ann's", client: "phone", request: "r1")) == first)
            #expect(running.http.maxRevision == 1)
            // Bob sending the same client and request ids gets no replay of Ann's answer:
            // his request is applied as his own.
            let bob = try await send("bob", Self.createList("Bob's", client: "phone", request: "r1"))
            #expect(bob["maxRevision"] == .integer(2))
            #expect(bob != first)
            // Nor can user and client ids be split differently to reach Ann's reply key:
            // user "ann/x" with client "y" and user "ann" with client "x/y" are two owners.
            let split = try await send("ann/x", Self.createList("One", client: "y", request: "r2"))
            let other = try await send("ann", Self.createList("Two", client: "x/y", request: "r2"))
            #expect(split["maxRevision"] == .integer(3))
            #expect(other["maxRevision"] == .integer(4))
            #expect(running.http.maxRevision == 4)
        }
    }
}
