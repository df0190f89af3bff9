import FieldMergeJSON
import FieldMergeServer
import FieldMergeServerSQLite
import FieldMergeServerAuth
import FieldMergeServerHTTP
import Foundation
import JWTKit
import Testing

/// `Authorization: Bearer <jwt>` on `POST /sync`: what is refused, with what, and that a
/// refused request writes nothing.
@Suite struct AuthenticationTests {
    static let createHome = Array(#"{"maxRevision":0,"changeSets":[{"types":["lists"],"lists":{"create":[-1],"update":[],"delete":[],"attributes":{"-1":{"name":"Home"}}}}]}"#.utf8)

    enum BadCredential: String, CaseIterable, Sendable {
        case none, basicScheme, notAJWT, badSignature, expired, noSubject, malformedRoles

        /// The headers, and what the 401's message must say.
        func request() async throws -> (headers: [String: String], message: String) {
            switch self {
            case .none: return ([:], "no 'Authorization: Bearer")
            case .basicScheme: return (["Authorization": "Basic YW5uOnNlY3JldA=="], "not 'Bearer <token>'")
            case .notAJWT: return (bearer("not-a-jwt"), "not a well-formed JWT")
            case .badSignature: return (bearer(try await TestTokens.token("ann", secret: TestTokens.otherSecret)), "signature does not verify")
            case .expired: return (bearer(try await TestTokens.token("ann", expiresIn: -60)), "expired")
            case .noSubject:
                let token = try await TestTokens.sign(SyncTokenClaims(user: nil, expires: Date(timeIntervalSinceNow: 3600)))
                return (bearer(token), "no 'sub'")
            case .malformedRoles:
                let claims = MalformedRolesClaims(sub: "ann", exp: .init(value: Date(timeIntervalSinceNow: 3600)), roles: "admin")
                return (bearer(try await TestTokens.sign(claims)), "'roles' claim is malformed (an array of strings)")
            }
        }
    }

    @Test(arguments: BadCredential.allCases)
    func badCredential_is401Unauthenticated_andWritesNothing(_ credential: BadCredential) async throws {
        let (headers, message) = try await credential.request()
        try await withAuthenticatedServer(try RevisionServer(.memory, schema: httpTestSchema()), verifier: try await TestTokens.verifier()) { running in
            let before = try await running.state()
            let response = try await RawHTTP.exchange(port: running.port, headers: headers, body: Self.createHome)
            #expect(response.status == 401)
            #expect(response.headers["www-authenticate"] == "Bearer")
            let error = try JSONValue.parse(Data(response.body))
            #expect(error["error"] == .string("unauthenticated"))
            guard case .string(let text)? = error["message"] else { Issue.record("no message"); return }
            #expect(text.contains(message), "\(text)")
            if let sent = headers["Authorization"]?.split(separator: " ").last { #expect(!text.contains(sent)) }
            #expect(try await running.state() == before)
        }
    }

    @Test func goodToken_syncs_andHealthNeedsNone() async throws {
        try await withAuthenticatedServer(try RevisionServer(.memory, schema: httpTestSchema()), verifier: try await TestTokens.verifier()) { running in
            let token = try await TestTokens.token("ann")
            let response = try await RawHTTP.exchange(port: running.port, headers: bearer(token), body: Self.createHome)
            #expect(response.status == 200)
            #expect(try JSONValue.parse(Data(response.body))["maxRevision"] == .integer(1))
            // The scheme's name is case-insensitive (RFC 9110 §11.1).
            let lower = try await RawHTTP.exchange(port: running.port, headers: ["Authorization": "bearer \(token)"], body: Array(#"{"maxRevision":1,"changeSets":[]}"#.utf8))
            #expect(lower.status == 200)
            let health = try await RawHTTP.exchange(port: running.port, method: "GET", path: "/health")
            #expect(health.status == 200)
            #expect(running.http.maxRevision == 1)
        }
    }

    @Test func verifier_checksIssuerAudienceAndNotBefore() async throws {
        let verifier = try await TestTokens.verifier(.init(issuer: "https://id.example", audience: "fieldmerge"))
        let hour = Date(timeIntervalSinceNow: 3600)
        let good = SyncTokenClaims(
            user: "ann", expires: hour, tenant: "acme", roles: ["editor", "admin"], issuer: "https://id.example", audience: ["other", "fieldmerge"])
        #expect(try await verifier.identity(of: TestTokens.sign(good)) == SyncIdentity(user: "ann", tenant: "acme", roles: ["editor", "admin"]))

        var wrongIssuer = good
        wrongIssuer.iss = "https://evil.example"
        var wrongAudience = good
        wrongAudience.aud = "another-service"
        var notYet = good
        notYet.nbf = .init(value: Date(timeIntervalSinceNow: 600))
        for (claims, message) in [(wrongIssuer, "issuer"), (wrongAudience, "audience"), (notYet, "not valid yet")] {
            let token = try await TestTokens.sign(claims)
            await #expect { _ = try await verifier.identity(of: token) } throws: { error in
                (error as? AuthenticationFailure)?.message.contains(message) == true
            }
        }
    }

    @Test func keys_tooShortSecretOrMissingSource_areRefusedClearly() async throws {
        await #expect(throws: TokenKeyError("the HS256 secret has 5 bytes; it needs at least 32")) {
            _ = try await TokenVerifier.hmac(secret: Array("short".utf8))
        }
        await #expect(throws: TokenKeyError("$FM_NO_SUCH_VARIABLE: the environment variable is not set")) {
            _ = try await TokenKeySource.secretEnvironment("FM_NO_SUCH_VARIABLE").verifier(environment: [:])
        }
        await #expect(throws: TokenKeyError("/nonexistent/secret: cannot read the file")) {
            _ = try await TokenKeySource.secretFile("/nonexistent/secret").verifier()
        }
        // A secret file's trailing newline is not part of the secret.
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("fm-secret-\(UUID().uuidString)")
        try Data(TestTokens.secret + Array("\n".utf8)).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let verifier = try await TokenKeySource.secretFile(file.path).verifier()
        #expect(try await verifier.identity(of: TestTokens.token("ann")).user == "ann")
    }
}
