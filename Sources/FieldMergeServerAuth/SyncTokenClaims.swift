import Foundation
import JWTKit

/// The claims of a sync token: `sub` (the user), `exp`, and optionally `nbf`, `iss`, `aud`,
/// `tenant` (a string) and `roles` (an array of strings). Other claims are ignored.
///
/// A server-side issuer may sign these with jwt-kit (`JWTKeyCollection.sign`). When
/// verifying, every field is optional, and one of the wrong type is noted in ``malformed``
/// rather than failing the decoding, so that ``TokenVerifier`` can say which claim is wrong;
/// it checks them after the signature, against its own clock and requirements.
public struct SyncTokenClaims: JWTPayload, Equatable {
    public var sub: SubjectClaim?
    public var exp: ExpirationClaim?
    public var nbf: NotBeforeClaim?
    public var iss: IssuerClaim?
    public var aud: AudienceClaim?
    public var tenant: String?
    public var roles: [String]?
    /// The claims present with a value of the wrong type, by name (decoding only).
    public internal(set) var malformed: [String] = []

    enum CodingKeys: String, CodingKey {
        case sub, exp, nbf, iss, aud, tenant, roles
    }

    /// Claims for `user`, valid until `expires`.
    public init(
        user: String?, expires: Date?, tenant: String? = nil, roles: [String]? = nil, notBefore: Date? = nil,
        issuer: String? = nil, audience: [String]? = nil
    ) {
        sub = user.map(SubjectClaim.init(value:))
        exp = expires.map(ExpirationClaim.init(value:))
        nbf = notBefore.map(NotBeforeClaim.init(value:))
        iss = issuer.map(IssuerClaim.init(value:))
        aud = audience.map(AudienceClaim.init(value:))
        self.tenant = tenant
        self.roles = roles
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        var malformed: [String] = []
        func claim<T: Decodable>(_ key: CodingKeys) -> T? {
            do { return try container.decodeIfPresent(T.self, forKey: key) } catch {
                malformed.append(key.rawValue)
                return nil
            }
        }
        sub = claim(.sub)
        exp = claim(.exp)
        nbf = claim(.nbf)
        iss = claim(.iss)
        aud = claim(.aud)
        tenant = claim(.tenant)
        roles = claim(.roles)
        self.malformed = malformed
    }

    /// Nothing: ``TokenVerifier/identity(of:)`` checks the claims.
    public func verify(using algorithm: some JWTAlgorithm) async throws {}
}
