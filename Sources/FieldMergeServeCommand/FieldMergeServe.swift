import ArgumentParser
import FieldMerge
import FieldMergeServer
import FieldMergeServerAuth
import Foundation

#if !Server || !Tools
#error("FieldMergeServeCommand needs the package traits Server and Tools (both on by default)")
#endif

/// `fieldmerge-server serve` as a library: an app's own executable serves its Swift schema
/// (custom strategies and record rules are closures or types of the app) with every flag of
/// the stock command.
///
/// An app's `main.swift` builds its schema and calls ``main(schema:access:)``, in ten
/// lines (<doc:ServingAnAppsSchema>).
///
/// `notes-server --db server.sqlite --port 8080 --mode merge --jwks keys.json` then parses
/// its arguments as `fieldmerge-server serve` does. `--schema FILE` is refused: the schema is
/// the app's. `access` says who may write and read what, in one value that sets the write
/// rules, the read rules and the scopes together (none can be forgotten).
public enum FieldMergeServe {
    /// Parses the process's arguments as `fieldmerge-server serve` does, serves `schema`
    /// until SIGINT or SIGTERM, and exits (code 2 for bad files, 1 when the database cannot
    /// be opened or the address bound, 64 for bad arguments, 0 after a clean shutdown).
    ///
    /// - Parameters:
    ///   - schema: The app's schema; `--schema` is refused.
    ///   - access: Who may write and read what (``ServeConfiguration/Access``); by default
    ///     `--policy FILE` decides when given, else everyone may do everything.
    public static func main(schema: Schema, access: ServeConfiguration.Access = .policyOption) async {
        await main(ServeConfiguration(schema: .swift(schema), access: access))
    }

    /// Runs `serve` with `configuration` as the root command of this executable (named
    /// after the executable in its help).
    public static func main(_ configuration: ServeConfiguration) async {
        let name = URL(fileURLWithPath: CommandLine.arguments.first ?? "serve").lastPathComponent
        await $context.withValue(Context(configuration: configuration, commandName: name)) {
            await ServeCommand.main(nil)
        }
    }

    /// Runs `operation` (an app's own command tree's `main`, with ``ServeCommand`` as a
    /// subcommand named `serve`) with `configuration` as what `serve` serves.
    public static func withConfiguration<Result>(
        _ configuration: ServeConfiguration, isolation: isolated (any Actor)? = #isolation,
        operation: () async throws -> Result
    ) async rethrows -> Result {
        try await $context.withValue(
            Context(configuration: configuration, commandName: "serve"), operation: operation, isolation: isolation)
    }

    /// What the commands parsed and run in this task serve: ArgumentParser makes the
    /// command itself from the arguments, so the app's values come this way.
    struct Context: Sendable {
        var configuration: ServeConfiguration
        var commandName: String
    }

    @TaskLocal static var context: Context?

    /// The configuration of this task; without one, `--schema FILE` is required and
    /// `--policy` decides (what `fieldmerge-server serve` does without the league default).
    static var configuration: ServeConfiguration {
        context?.configuration ?? ServeConfiguration(schema: .file())
    }
}

/// What `serve` serves beyond its flags: the schema and who may write and read what.
public struct ServeConfiguration: Sendable {
    /// Where the schema comes from.
    public enum SchemaSource: Sendable {
        /// The app's schema, in Swift: `--schema` is refused (a file would say the same thing
        /// twice, or something else).
        case swift(Schema)
        /// The schema file of `--schema FILE` (Specs/schema.md), the strategy names it uses
        /// beyond the built-in ones looked up in `customStrategies` and `recordStrategies`;
        /// without `--schema`, `fallback`, and when that is nil too the command refuses to
        /// start. `fieldmerge-server serve` is `.file(fallback:)` with the simulation's league.
        case file(
            customStrategies: [String: FieldStrategy] = [:],
            recordStrategies: [String: any RecordMergeStrategy] = [:],
            fallback: Schema? = nil)
    }

    /// Who may write and read what. Each case sets the server's write rules (`authorize`),
    /// read rules (`readable`) and scopes together.
    public enum Access: Sendable {
        /// `--policy FILE` when given (checked against the schema), else every client may
        /// write and read every record.
        case policyOption
        /// This policy, as `--policy` would read it (`RevisionServer.Options.enforce(_:)`);
        /// `--policy` is refused.
        case policy(AccessPolicy)
        /// The app's own decisions, each stated (nil: allow everything, send every entity,
        /// no scopes); `--policy` is refused.
        case rules(authorize: RevisionServer.Authorization?, readable: RevisionServer.ReadFilter?, scopes: ScopeRules?)
    }

    public var schema: SchemaSource
    public var access: Access

    public init(schema: SchemaSource, access: Access = .policyOption) {
        self.schema = schema
        self.access = access
    }
}
