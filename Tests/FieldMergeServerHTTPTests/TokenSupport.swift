import FieldMerge
import FieldMergeServer
import FieldMergeServerAuth
import FieldMergeServerHTTP
import Foundation
import JWTKit
import Logging

/// The same claims with `roles` of the wrong type (a string).
struct MalformedRolesClaims: JWTPayload {
    var sub: SubjectClaim
    var exp: ExpirationClaim
    var roles: String

    func verify(using algorithm: some JWTAlgorithm) async throws {}
}

/// Tokens signed in the tests, with jwt-kit, as an identity provider would.
enum TestTokens {
    static let secret = Array("the tests' HS256 secret, 32 bytes or more".utf8)
    static let otherSecret = Array("a secret the server does not know, 32+ bytes".utf8)

    static func sign(_ claims: some JWTPayload, secret: [UInt8] = secret) async throws -> String {
        let keys = JWTKeyCollection()
        await keys.add(hmac: HMACKey(from: secret), digestAlgorithm: .sha256)
        return try await keys.sign(claims)
    }

    /// A token for `user`, valid for an hour (or expired `expiresIn` < 0 seconds ago).
    static func token(
        _ user: String, tenant: String? = nil, roles: [String] = [], expiresIn: TimeInterval = 3600, secret: [UInt8] = secret
    ) async throws -> String {
        try await sign(
            SyncTokenClaims(user: user, expires: Date(timeIntervalSinceNow: expiresIn), tenant: tenant, roles: roles),
            secret: secret)
    }

    static func verifier(_ requirements: TokenVerifier.Requirements = .init()) async throws -> TokenVerifier {
        try await TokenVerifier.hmac(secret: secret, requirements: requirements)
    }
}

/// `Authorization: Bearer <token>`, for ``RawHTTP``.
func bearer(_ token: String) -> [String: String] { ["Authorization": "Bearer \(token)"] }

/// Runs `body` against a live server that requires tokens `verifier` accepts.
func withAuthenticatedServer<T>(
    _ server: sending RevisionServer, verifier: TokenVerifier, _ body: (RunningServer) async throws -> T
) async throws -> T {
    try await withHTTPServer(making: { logger, onListening in
        SyncHTTPServer(
            server: server, configuration: .init(port: 0), logger: logger,
            middleware: { $0.add(middleware: BearerAuthenticator(verifier: verifier)) }, onListening: onListening)
    }, body)
}

/// Runs `body` against a live multi-tenant server over `tenants` that requires tokens
/// `verifier` accepts (the token's `tenant` claim picks the data set).
func withTenantServer<T>(
    _ tenants: TenantDirectory, schema: Schema, verifier: TokenVerifier, configuration: SyncHTTPServer.Configuration = .init(port: 0),
    _ body: (RunningServer) async throws -> T
) async throws -> T {
    try await withHTTPServer(making: { logger, onListening in
        SyncHTTPServer(
            tenants: tenants, schema: schema, configuration: configuration, logger: logger,
            middleware: { $0.add(middleware: BearerAuthenticator(verifier: verifier)) }, onListening: onListening)
    }, body)
}
