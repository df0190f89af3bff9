import ArgumentParser
import FieldMerge
import FieldMergeJSON
import FieldMergeServerAuth
import Foundation

/// `fieldmerge serve`'s options for bearer tokens and role permissions (Specs/http.md).
struct ServeAuthOptions: ParsableArguments {
    @Option(help: "Require bearer tokens signed with HS256 and the secret in this file (at least 32 bytes; one trailing newline ignored).")
    var jwtSecretFile: String?

    @Option(help: "Require bearer tokens signed with HS256 and the secret in this environment variable.")
    var jwtSecretEnv: String?

    @Option(help: "Require bearer tokens signed with a key of this JWKS file (public keys: ES256, RS256, …).")
    var jwks: String?

    @Option(help: "The 'iss' a token must carry.")
    var jwtIssuer: String?

    @Option(help: "A value a token's 'aud' must contain.")
    var jwtAudience: String?

    @Option(help: "A JSON policy of which roles may create, update and delete which entities.")
    var policy: String?

    func validate() throws {
        let sources = [jwtSecretFile, jwtSecretEnv, jwks].compactMap { $0 }
        guard sources.count <= 1 else { throw ValidationError("give at most one of --jwt-secret-file, --jwt-secret-env and --jwks") }
        if sources.isEmpty, jwtIssuer != nil || jwtAudience != nil {
            throw ValidationError("--jwt-issuer and --jwt-audience need one of --jwt-secret-file, --jwt-secret-env, --jwks")
        }
    }

    /// Where the token keys come from; nil when the server is open.
    var keySource: TokenKeySource? {
        if let jwtSecretFile { return .secretFile(jwtSecretFile) }
        if let jwtSecretEnv { return .secretEnvironment(jwtSecretEnv) }
        if let jwks { return .jwksFile(jwks) }
        return nil
    }

    /// The token verifier, or nil without keys, keeping `customClaims` (those the policy's
    /// scope rules name); unusable keys exit with code 2.
    func loadVerifier(customClaims: Set<String> = []) async throws -> TokenVerifier? {
        guard let keySource else { return nil }
        do {
            return try await keySource.verifier(
                requirements: .init(issuer: jwtIssuer, audience: jwtAudience, customClaims: customClaims))
        } catch {
            ServeCommand.fail("bad token keys: \(error)")
            throw ExitCode(2)
        }
    }

    /// The policy of `--policy`, checked against `schema`; a bad file exits with code 2.
    func loadPolicy(schema: Schema) throws -> AccessPolicy? {
        guard let policy else { return nil }
        do {
            guard let data = fileContents(atPath: policy) else {
                throw DocumentError(path: policy, message: "cannot read the file")
            }
            return try AccessPolicy.decode(data, schema: schema)
        } catch let error as DocumentError {
            ServeCommand.fail("bad policy file \(policy): \(error)")
            throw ExitCode(2)
        }
    }
}
