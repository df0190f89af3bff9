import FieldMergeServer
import FieldMergeServerAuth
import Foundation
import JWTKit
import Testing

/// A token's `kid` must name a key the server has (Specs/http.md §7): jwt-kit alone would
/// verify a token naming an unknown key with its default key.
@Suite struct TokenKeyIDTests {
    static let claims = SyncTokenClaims(user: "ann", expires: Date(timeIntervalSinceNow: 600))
    static let unknownKey = AuthenticationFailure("the token is signed with a key the server does not know")

    @Test func hs256_aKidNamingNoKey_isRefused_noKidIsAccepted() async throws {
        let verifier = try await TestTokens.verifier()
        // Signed with the server's own secret, but naming a key id: the secret has none.
        let keys = JWTKeyCollection()
        await keys.add(hmac: HMACKey(from: TestTokens.secret), digestAlgorithm: .sha256, kid: "other")
        let named = try await keys.sign(Self.claims, kid: "other")
        await #expect(throws: Self.unknownKey) { _ = try await verifier.identity(of: named) }
        #expect(try await verifier.identity(of: TestTokens.sign(Self.claims)).user == "ann")
    }

    @Test func rs256_anUnknownKidAgainstAOneKeyJWKS_isRefused() async throws {
        let key = try Insecure.RSA.PrivateKey(pem: Self.rsaPEM)
        let verifier = try await TokenVerifier.jwks(json: Self.jwks([("k1", key)]))
        func token(kid: String?) async throws -> String {
            let keys = JWTKeyCollection()
            await keys.add(rsa: key, digestAlgorithm: .sha256, kid: kid.map { JWKIdentifier(string: $0) })
            return try await keys.sign(Self.claims, kid: kid.map { JWKIdentifier(string: $0) })
        }
        // The right signature under a key id the document does not have.
        await #expect(throws: Self.unknownKey) { _ = try await verifier.identity(of: token(kid: "k9")) }
        #expect(try await verifier.identity(of: token(kid: "k1")).user == "ann")
        // No kid: the document's only key.
        #expect(try await verifier.identity(of: token(kid: nil)).user == "ann")
        #expect(verifier.keyIDs == ["k1"])
    }

    @Test func noKid_againstSeveralKeys_isRefused() async throws {
        let key = try Insecure.RSA.PrivateKey(pem: Self.rsaPEM)
        let other = ES256PrivateKey()
        let parameters = try #require(other.parameters)
        let ec = #"{"kty":"EC","crv":"P-256","alg":"ES256","kid":"k2","x":"\#(parameters.x)","y":"\#(parameters.y)"}"#
        let verifier = try await TokenVerifier.jwks(json: Self.jwks([("k1", key)], extra: ec))
        let keys = JWTKeyCollection()
        await keys.add(rsa: key, digestAlgorithm: .sha256)
        let unnamed = try await keys.sign(Self.claims)
        await #expect(throws: AuthenticationFailure("the token names no key ('kid') and the server has several")) {
            _ = try await verifier.identity(of: unnamed)
        }
    }

    /// A JWKS document of RSA public keys (and `extra`, another key's JSON).
    static func jwks(_ keys: [(String, Insecure.RSA.PrivateKey)], extra: String? = nil) throws -> String {
        var entries = try keys.map { kid, key in
            let (modulus, exponent) = try key.publicKey.getKeyPrimitives()
            return #"{"kty":"RSA","alg":"RS256","use":"sig","kid":"\#(kid)","n":"\#(base64URL(modulus))","e":"\#(base64URL(exponent))"}"#
        }
        if let extra { entries.append(extra) }
        return #"{"keys":[\#(entries.joined(separator: ","))]}"#
    }

    static func base64URL(_ data: Data) -> String {
        data.base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    /// A 2048-bit RSA key made for these tests (`openssl genrsa 2048`); it signs nothing else.
    static let rsaPEM = """
-----BEGIN PRIVATE KEY-----
MIIEvgIBADANBgkqhkiG9w0BAQEFAASCBKgwggSkAgEAAoIBAQDdHrMXjp7FfwJc
D2ki7CgzrzqSuZMvuTHP+GsdA3Q5BH34dK20EAqWScXS2GCzFyC8N0OgYwYkGru0
wEXJFPWrPJpVwmVIVQISjtH/B4sROhnLhFWK6RSIcM8SXvUgBXWozUQVlN5aN5Z5
lDc35tGHONDMQLLVK8il5yZ6lcVJzivQCR4/ViISty0UtMSMWTKEoUTVJacIdzZE
Yvbv0oGPqeazyH1N78gIgs8YknWv+3kWNbU1Fng+k2GVmqBl8NstXjplTw5N9osp
qX0AsS3iqP05AppFuZ0Mig4nqFE9TFdKgwCjv/rBx1/PNLHuuUW3mnrp68KHdsHT
CA12UOkjAgMBAAECggEAGzwUwuoGFD04hS5AvNRpfzQt+rRwtIgS4pKuXrx2LC+p
dFiqrGrtYuVjQDz2bBiFJ6mG4tJPh1Ljm7ey4Ll8KMMmHzn6T5Zo0vBUXR0Iu+50
DuUVxC5BIS0D1Ddt6avCejAOGrpjSKlgF0lyI6iCVi1hSkcNv8PMyuJVkvOvgQ9x
I523VnZXpwpszwFPqqEq/is/fJ6OfA/ARJV7ZoKfKIgWJr29Xiz89Lk4yuEyiPQL
CNWDWQY+AlSVxMbv2cEMxvcpWroS6PU6BeoWNASyP7aOUNoIFzAXjad3W4UeAShW
VbAYu/NuSZ54jjmaZFoj0XtNLymT3ZpL/OoL4mxHAQKBgQD1BA/75AcYZRIAGqEP
+dYnYbkF3RFOyJ+vjIddXqDDwrT68spSm/WFSIuZewDX167E2mPPhQJhQupO+ENy
htFiDmdwrTY3OspJcCk+Z0are2fWbdiGcJvPSmUxJ6QwYNPR/XbgteXd2s7acjOi
hmpyikWnxSS4IlDCSc2hYOC98QKBgQDnCGTevE1SUwClMXJiPkBkNj7WcSoQ3zta
bxzONq4i7vqLYPbusaYuZfQ+XZGy1c678behvPe0ROb59f36WF7y54dlcPKamB2z
Sj4ly49abhROZGXsuLHCqpRW8WmRDwNR2/CFCJ0mYiBJFWM6mqdd2F09X2zgDOnR
IYU+ReSUUwKBgQCOKtRHeVFwozylmM354iKT6U0djN99EkYt62GkGMM5s6GltvkU
o+/7bVOrM8cSdtCu4nVltSzjWJtyRPWF35pgxjDZHXhG5bL4l78muXA1Ej73Gfe4
UmDmD6nVssW/WH+v6d1vl7wQVeUOtZMma84aNgciyO58dVTc10wcpoThUQKBgD4Y
zHvtot7AvoioLLVpRAdraSJcUlEsnxhkixqGKfHrx93Ulyp7B06rSqXEopetzh5I
DvJjBzUl2+tNihFS1Vp2jrbeT+brgfghuWiRORu2QLD9XUPuNKE9Fhf0VUqO/XZw
JkqrkQmzEDh0jjI/RUL9F7qaPnpOHj5+wwCE6rZPAoGBAOl0gcLXNgTaLfeGbGLA
HxuprDwifPQudqIuEGtEt/k/yg/1A9eCJZiVRT3Qcy66S/0+Crj/uHMmsRtF0O6m
Y2hU0cSrFYx2cdtM4Wz+EQ01tROO6x4rm5Tz32Vpkj029MXP4s6kBYxVhqt2e0GT
MXqzxTW36+oouXA8c6/rKMQ1
-----END PRIVATE KEY-----
"""
}
