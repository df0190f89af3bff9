import FieldMerge
import FieldMergeWorkload
import Foundation

/// The identity provider of a scoped run against servers in other processes: HS256 tokens
/// (JWT, RFC 7519) for the secret the servers verify with (`serve --jwt-secret-file`), each
/// naming a user (`sub`) and the roles it has when the token is made (Specs/http.md §7).
/// Signed here with the package's SHA-256 (HMAC, RFC 2104), so that the simulation needs no
/// JWT library; the servers check them with theirs.
public struct TeamTokens: Sendable {
    private let secret: [UInt8]
    /// How long a token is valid, in seconds, on the real clock the servers check it with.
    private let lifetime: TimeInterval

    /// - Parameter secret: The HS256 secret, at least 32 bytes as `serve` requires.
    public init(secret: [UInt8], lifetime: TimeInterval = 3600) throws {
        guard secret.count >= 32 else { throw SimulationError("the token secret has \(secret.count) bytes; it needs at least 32") }
        self.secret = secret
        self.lifetime = lifetime
    }

    private struct Claims: Encodable {
        var sub: String
        var exp: Int64
        var roles: [String]
    }

    /// A token for `user` with `roles`, valid for the lifetime from now.
    public func token(user: String, roles: Set<String>) -> String {
        let claims = Claims(sub: user, exp: Int64(Date().timeIntervalSince1970 + lifetime), roles: roles.sorted())
        // Encoding three plain fields cannot fail.
        let payload = try! JSONEncoder().encode(claims)
        let signed = Self.base64URL(Array(#"{"alg":"HS256","typ":"JWT"}"#.utf8)) + "." + Self.base64URL(Array(payload))
        return signed + "." + Self.base64URL(Self.hmacSHA256(key: secret, Array(signed.utf8)))
    }

    /// HMAC-SHA256 (RFC 2104, block size 64).
    static func hmacSHA256(key: [UInt8], _ message: [UInt8]) -> [UInt8] {
        var block = key.count > 64 ? SHA256.hash(key) : key
        block += [UInt8](repeating: 0, count: 64 - block.count)
        let inner = SHA256.hash(block.map { $0 ^ 0x36 } + message)
        return SHA256.hash(block.map { $0 ^ 0x5C } + inner)
    }

    /// Base64url without padding (RFC 7515 §2).
    static func base64URL(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }
}
