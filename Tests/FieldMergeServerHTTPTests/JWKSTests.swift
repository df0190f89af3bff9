import FieldMergeServer
import FieldMergeServerAuth
import Foundation
import JWTKit
import Testing

/// Public keys from a JWKS file (`serve --jwks`): ES256 tokens of the matching private key.
@Suite struct JWKSTests {
    @Test func es256Tokens_verifyAgainstAJWKSFile_othersDoNot() async throws {
        let key = ES256PrivateKey()
        let parameters = try #require(key.parameters)
        let jwks = #"{"keys":[{"kty":"EC","crv":"P-256","use":"sig","alg":"ES256","kid":"k1","x":"\#(parameters.x)","y":"\#(parameters.y)"}]}"#
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("fm-jwks-\(UUID().uuidString).json")
        try Data(jwks.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let verifier = try await TokenKeySource.jwksFile(file.path).verifier()

        func token(signedWith key: ES256PrivateKey) async throws -> String {
            let keys = JWTKeyCollection()
            await keys.add(ecdsa: key, kid: "k1")
            return try await keys.sign(SyncTokenClaims(user: "ann", expires: Date(timeIntervalSinceNow: 600), tenant: "acme", roles: ["editor"]))
        }
        #expect(try await verifier.identity(of: token(signedWith: key)) == SyncIdentity(user: "ann", tenant: "acme", roles: ["editor"]))
        // Another private key under the same kid, and an HS256 token, are refused.
        let forged = try await token(signedWith: ES256PrivateKey())
        await #expect(throws: AuthenticationFailure("the token's signature does not verify")) { _ = try await verifier.identity(of: forged) }
        let hmac = try await TestTokens.token("ann")
        await #expect(throws: AuthenticationFailure.self) { _ = try await verifier.identity(of: hmac) }
        // A file that is not a JWKS is refused when the server starts.
        try Data("{}".utf8).write(to: file)
        await #expect(throws: TokenKeyError.self) { _ = try await TokenKeySource.jwksFile(file.path).verifier() }
    }
}
