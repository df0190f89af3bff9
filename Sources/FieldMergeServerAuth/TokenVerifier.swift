import FieldMergeServer
import Foundation
import JWTKit

/// Verifies bearer tokens (JWT, with jwt-kit) and reads the `SyncIdentity` they carry:
/// `sub` is the user, `tenant` the tenant, `roles` the roles, and the custom claims
/// ``Requirements/customClaims`` names go to `SyncIdentity/claims`.
///
/// A token is checked in this order, and refused at the first check it fails (Specs/http.md
/// §7): it is a JWT; its `kid`, if any, names one of the keys (``keyIDs``; without a `kid`
/// the server must have one key); its algorithm is the key's and its signature verifies;
/// its claims have their types; it has a `sub`, and an `exp` later than now; its `nbf` (if
/// any) is not later than now; it names the required issuer (`iss`) and audience (`aud`)
/// when those are set.
public struct TokenVerifier: Sendable {
    /// Claims a token must carry, beyond `sub` and `exp`, and the custom claims it may carry.
    public struct Requirements: Sendable, Equatable {
        /// The `iss` a token must name; nil: any.
        public var issuer: String?
        /// A value the token's `aud` must contain; nil: any.
        public var audience: String?
        /// Custom claims kept in `SyncIdentity/claims` when a token has them (the
        /// `ScopeRules/claims` its scope rules name): a string, an integer, or an array of
        /// strings and integers; a token with one of another shape is refused. Optional;
        /// other custom claims are ignored.
        public var customClaims: Set<String>

        public init(issuer: String? = nil, audience: String? = nil, customClaims: Set<String> = []) {
            self.issuer = issuer
            self.audience = audience
            self.customClaims = customClaims
        }
    }

    let keys: JWTKeyCollection
    /// The ids of the keys, the `kid`s a token may name; empty for a key without an id
    /// (an HS256 secret), which only tokens without a `kid` may name.
    public let keyIDs: Set<String>
    public let requirements: Requirements
    private let now: @Sendable () -> Date

    /// - Parameters:
    ///   - keys: The keys tokens may be signed with (see ``hmac(secret:requirements:now:)`` and
    ///     ``jwks(json:requirements:now:)``).
    ///   - keyIDs: The ids of the keys in `keys` (every `kid` they were added with); empty
    ///     when `keys` is one key without an id. A token naming another `kid` is refused.
    ///   - requirements: The claims a token must carry, and the custom claims kept.
    ///   - now: The clock `exp` and `nbf` are checked against.
    public init(
        keys: JWTKeyCollection, keyIDs: Set<String> = [], requirements: Requirements = Requirements(),
        now: @escaping @Sendable () -> Date = { Date() }
    ) {
        self.keys = keys
        self.keyIDs = keyIDs
        self.requirements = requirements
        self.now = now
    }

    /// The identity `token` carries.
    ///
    /// - Throws: ``AuthenticationFailure`` saying what is wrong with the token.
    public func identity(of token: String) async throws(AuthenticationFailure) -> SyncIdentity {
        try checkKeyID(of: token)
        let claims: SyncTokenClaims
        do {
            claims = try await keys.verify(token, as: SyncTokenClaims.self)
        } catch {
            throw AuthenticationFailure(verifying: error)
        }
        if let name = claims.malformed.first ?? claims.malformedCustom.sorted().first(where: requirements.customClaims.contains) {
            throw AuthenticationFailure("the token's '\(name)' claim is malformed (\(Self.expectedType[name] ?? Self.expectedCustomType))")
        }
        guard let user = claims.sub?.value, !user.isEmpty else { throw AuthenticationFailure("the token has no 'sub' claim") }
        guard let expiry = claims.exp?.value else { throw AuthenticationFailure("the token has no 'exp' claim") }
        let now = now()
        guard now < expiry else { throw AuthenticationFailure("the token has expired") }
        if let notBefore = claims.nbf?.value, now < notBefore { throw AuthenticationFailure("the token is not valid yet ('nbf')") }
        if let issuer = requirements.issuer, claims.iss?.value != issuer {
            throw AuthenticationFailure("the token's issuer ('iss') is not the one the server accepts")
        }
        if let audience = requirements.audience, !(claims.aud?.value.contains(audience) ?? false) {
            throw AuthenticationFailure("the token's audience ('aud') does not include this server")
        }
        return SyncIdentity(
            user: user, tenant: claims.tenant, roles: Set(claims.roles ?? []),
            claims: claims.custom.filter { requirements.customClaims.contains($0.key) })
    }
}

extension TokenVerifier {
    /// What each claim must be.
    static let expectedType = [
        "sub": "a string", "iss": "a string", "tenant": "a string", "exp": "a number", "nbf": "a number",
        "aud": "a string or an array of strings", "roles": "an array of strings",
    ]

    /// What a custom claim must be.
    static let expectedCustomType = "a string, an integer or an array of strings and integers"


    /// The shortest HS256 secret taken, in bytes (RFC 7518 §3.2: at least the hash's size).
    public static let minimumSecretBytes = 32

    /// Tokens signed with HS256 and `secret` (at least ``minimumSecretBytes`` bytes).
    ///
    /// - Throws: ``TokenKeyError`` for a shorter secret.
    public static func hmac(
        secret: [UInt8], requirements: Requirements = Requirements(), now: @escaping @Sendable () -> Date = { Date() }
    ) async throws(TokenKeyError) -> TokenVerifier {
        guard secret.count >= minimumSecretBytes else {
            throw TokenKeyError("the HS256 secret has \(secret.count) bytes; it needs at least \(minimumSecretBytes)")
        }
        let keys = JWTKeyCollection()
        await keys.add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256)
        return TokenVerifier(keys: keys, requirements: requirements, now: now)
    }

    /// Tokens signed with a private key whose public half is in the JWKS document `json`
    /// (`{"keys": [...]}`; ES256, RS256 and the other algorithms jwt-kit knows), picked by
    /// the token's `kid` (every key of the document has one); a token without a `kid` is
    /// accepted only when the document has a single key.
    ///
    /// - Throws: ``TokenKeyError`` when the document is not a JWKS jwt-kit can read.
    public static func jwks(
        json: String, requirements: Requirements = Requirements(), now: @escaping @Sendable () -> Date = { Date() }
    ) async throws(TokenKeyError) -> TokenVerifier {
        let keys = JWTKeyCollection()
        let keyIDs: Set<String>
        do {
            try await keys.add(jwksJSON: json)
            keyIDs = Set(try JSONDecoder().decode(JWKS.self, from: Data(json.utf8)).keys.compactMap { $0.keyIdentifier?.string })
        } catch {
            throw TokenKeyError("not a usable JWKS document: \(error)")
        }
        return TokenVerifier(keys: keys, keyIDs: keyIDs, requirements: requirements, now: now)
    }
}

/// Keys for tokens that cannot be used (a short secret, a bad JWKS document, a missing file).
public struct TokenKeyError: Error, Equatable, Sendable, CustomStringConvertible {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
