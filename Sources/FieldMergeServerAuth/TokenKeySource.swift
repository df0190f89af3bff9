import FieldMergeJSON
import Foundation

/// Where `fieldmerge serve` reads the keys of bearer tokens from.
public enum TokenKeySource: Sendable, Equatable {
    /// An HS256 secret: the bytes of a file, one trailing newline dropped.
    case secretFile(String)
    /// An HS256 secret: the value of an environment variable.
    case secretEnvironment(String)
    /// Public keys: a JWKS document (`{"keys": [...]}`) in a file.
    case jwksFile(String)

    /// A verifier for tokens signed with these keys.
    ///
    /// - Throws: ``TokenKeyError`` naming the file or variable that cannot be used.
    public func verifier(
        requirements: TokenVerifier.Requirements = TokenVerifier.Requirements(),
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) async throws(TokenKeyError) -> TokenVerifier {
        do throws(TokenKeyError) {
            switch self {
            case .secretFile(let path):
                var secret = try Self.contents(of: path)
                if secret.last == UInt8(ascii: "\n") { secret.removeLast() }
                if secret.last == UInt8(ascii: "\r") { secret.removeLast() }
                return try await .hmac(secret: secret, requirements: requirements)
            case .secretEnvironment(let name):
                guard let value = environment[name], !value.isEmpty else { throw TokenKeyError("the environment variable is not set") }
                return try await .hmac(secret: Array(value.utf8), requirements: requirements)
            case .jwksFile(let path):
                return try await .jwks(json: String(decoding: try Self.contents(of: path), as: UTF8.self), requirements: requirements)
            }
        } catch {
            throw TokenKeyError("\(origin): \(error.message)")
        }
    }

    /// The file or variable, as messages name it.
    public var origin: String {
        switch self {
        case .secretFile(let path), .jwksFile(let path): path
        case .secretEnvironment(let name): "$" + name
        }
    }

    private static func contents(of path: String) throws(TokenKeyError) -> [UInt8] {
        guard let data = fileContents(atPath: path) else { throw TokenKeyError("cannot read the file") }
        return [UInt8](data)
    }
}
