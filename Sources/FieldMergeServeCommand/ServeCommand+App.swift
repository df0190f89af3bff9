import ArgumentParser
import FieldMerge
import FieldMergeJSON
import FieldMergeServer
import FieldMergeServerAuth

/// What the app's ``ServeConfiguration`` decides: the schema served and who may write and
/// read what, with the flags that would say it again refused.
extension ServeCommand {
    /// Refuses `--schema` when the app gives its schema in Swift, `--policy` when it gives
    /// its access rules, and a missing `--schema` when there is neither a file nor a fallback.
    func validateAppConfiguration() throws {
        let configuration = FieldMergeServe.configuration
        switch configuration.schema {
        case .swift(let served):
            if let file = schema {
                throw ValidationError(
                    "--schema \(file): this server serves its app's schema, given in Swift (version \(served.version)); it reads no schema file")
            }
        case .file(_, _, let fallback):
            if self.schema == nil, fallback == nil { throw ValidationError("give --schema FILE, the schema to serve (Specs/schema.md)") }
        }
        if case .policyOption = configuration.access { return }
        if let policy = auth.policy {
            throw ValidationError("--policy \(policy): this server's access rules are given in Swift by its app; it reads no policy file")
        }
    }

    /// The schema served: the app's, or that of `--schema` (its custom strategies looked up
    /// in the app's), or the fallback; a bad file exits with code 2.
    func loadSchema() throws -> Schema {
        switch FieldMergeServe.configuration.schema {
        case .swift(let schema):
            return schema
        case .file(let customStrategies, let recordStrategies, let fallback):
            guard let file = schema else {
                guard let fallback else { throw ValidationError("give --schema FILE, the schema to serve (Specs/schema.md)") }
                return fallback
            }
            do {
                return try SchemaDocument.load(contentsOf: file, customStrategies: customStrategies, recordStrategies: recordStrategies)
            } catch {
                Self.fail("bad schema file \(file): \(error)\(Self.hint(error))")
                throw ExitCode(2)
            }
        }
    }

    /// Sets the write rules, read rules and scopes of `options` together: from `--policy`
    /// (checked against `schema`; a bad file exits with code 2) or the app's.
    func applyAccess(to options: inout RevisionServer.Options, schema: Schema) throws {
        switch FieldMergeServe.configuration.access {
        case .policyOption:
            if let policy = try auth.loadPolicy(schema: schema) { options.enforce(policy) }
        case .policy(let policy):
            options.enforce(policy)
        case .rules(let authorize, let readable, let scopes):
            options.authorize = authorize
            options.readable = readable
            options.scopes = scopes
        }
    }

    /// For a strategy name the file uses that nobody registered: where such a schema is
    /// served from.
    static func hint(_ error: DocumentError) -> String {
        guard error.message.hasPrefix("unknown strategy") else { return "" }
        return
            " (a strategy of the app's own is Swift code: serve the schema from the app's own executable with FieldMergeServeCommand, Specs/cli.md)"
    }
}
