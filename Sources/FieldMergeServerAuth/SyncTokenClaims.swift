import FieldMergeJSON
import Foundation
import JWTKit

/// The claims of a sync token: `sub` (the user), `exp`, and optionally `nbf`, `iss`, `aud`,
/// `tenant` (a string), `roles` (an array of strings) and custom claims (``custom``).
///
/// A server-side issuer may sign these with jwt-kit (`JWTKeyCollection.sign`). When
/// verifying, every field is optional, and one of the wrong type is noted in ``malformed``
/// (``malformedCustom`` for the others) rather than failing the decoding, so that
/// ``TokenVerifier`` can say which claim is wrong; it checks them after the signature,
/// against its own clock and requirements, and keeps the custom claims it is told to.
public struct SyncTokenClaims: JWTPayload, Equatable {
    public var sub: SubjectClaim?
    public var exp: ExpirationClaim?
    public var nbf: NotBeforeClaim?
    public var iss: IssuerClaim?
    public var aud: AudienceClaim?
    public var tenant: String?
    public var roles: [String]?
    /// The token's other claims, each as its values in text: a string is one value, an
    /// integer its decimal digits, an array of strings and integers each of its items (how
    /// `SyncIdentity/claims` holds them). Signed as arrays of strings; `iat` and `jti`
    /// are never among them.
    public var custom: [String: [String]]
    /// The claims present with a value of the wrong type, by name (decoding only).
    public internal(set) var malformed: [String] = []
    /// The other claims that are neither a string, an integer nor an array of those
    /// (decoding only): a token is refused for one only when it is kept.
    public internal(set) var malformedCustom: Set<String> = []

    /// A claim's name.
    struct Key: CodingKey, ExpressibleByStringLiteral {
        var stringValue: String
        init(stringValue: String) { self.stringValue = stringValue }
        init(stringLiteral value: String) { stringValue = value }
        var intValue: Int? { nil }
        init?(intValue: Int) { nil }
    }

    /// The claims a token names for itself or that ``TokenVerifier`` reads: never custom.
    static let namedClaims: Set<String> = ["sub", "exp", "nbf", "iss", "aud", "iat", "jti", "tenant", "roles"]

    /// Claims for `user`, valid until `expires`.
    public init(
        user: String?, expires: Date?, tenant: String? = nil, roles: [String]? = nil, notBefore: Date? = nil,
        issuer: String? = nil, audience: [String]? = nil, custom: [String: [String]] = [:]
    ) {
        sub = user.map(SubjectClaim.init(value:))
        exp = expires.map(ExpirationClaim.init(value:))
        nbf = notBefore.map(NotBeforeClaim.init(value:))
        iss = issuer.map(IssuerClaim.init(value:))
        aud = audience.map(AudienceClaim.init(value:))
        self.tenant = tenant
        self.roles = roles
        self.custom = custom
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: Key.self)
        var malformed: [String] = []
        func claim<T: Decodable>(_ key: Key) -> T? {
            do { return try container.decodeIfPresent(T.self, forKey: key) } catch {
                malformed.append(key.stringValue)
                return nil
            }
        }
        sub = claim("sub")
        exp = claim("exp")
        nbf = claim("nbf")
        iss = claim("iss")
        aud = claim("aud")
        tenant = claim("tenant")
        roles = claim("roles")
        self.malformed = malformed
        custom = [:]
        for key in container.allKeys where !Self.namedClaims.contains(key.stringValue) {
            if let values = Self.values(try? container.decode(JSONValue.self, forKey: key)) {
                custom[key.stringValue] = values
            } else {
                malformedCustom.insert(key.stringValue)
            }
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: Key.self)
        try container.encodeIfPresent(sub, forKey: "sub")
        try container.encodeIfPresent(exp, forKey: "exp")
        try container.encodeIfPresent(nbf, forKey: "nbf")
        try container.encodeIfPresent(iss, forKey: "iss")
        try container.encodeIfPresent(aud, forKey: "aud")
        try container.encodeIfPresent(tenant, forKey: "tenant")
        try container.encodeIfPresent(roles, forKey: "roles")
        for (name, values) in custom where !Self.namedClaims.contains(name) {
            try container.encode(values, forKey: Key(stringValue: name))
        }
    }

    /// A custom claim's values in text; nil for another shape.
    private static func values(_ claim: JSONValue?) -> [String]? {
        func text(_ value: JSONValue) -> String? {
            switch value {
            case .string(let string): string
            case .integer(let integer): String(integer)
            default: nil
            }
        }
        switch claim {
        case .array(let items)?:
            let values = items.compactMap(text)
            return values.count == items.count ? values : nil
        case let value?: return text(value).map { [$0] }
        case nil: return nil
        }
    }

    /// Nothing: ``TokenVerifier/identity(of:)`` checks the claims.
    public func verify(using algorithm: some JWTAlgorithm) async throws {}
}
