import ArgumentParser
import FieldMerge
import Foundation

#if !Tools
#error("FieldMergeToolCommands needs the package trait Tools (on by default)")
#endif

/// `fieldmerge sync` and `fieldmerge schema diff` as a library: an app's own executable runs
/// them under its Swift schema (custom strategies and record rules are closures or types of
/// the app, which a schema file cannot name for the stock tool), with every flag of the stock
/// commands. Its `main.swift` builds the schema and calls ``main(schema:)``; then
/// `notes-tool sync --url URL --replica device.sqlite` syncs a replica of the app's schema
/// (`--schema` is refused), and `notes-tool schema diff deployed.json` says whether the app's
/// schema migrates from a schema file (the new file may still be given).
public enum FieldMergeTool {
    /// Parses the process's arguments as `fieldmerge` does for `sync` and `schema`, runs the
    /// command under `schema`, and exits with the stock command's codes.
    public static func main(schema: Schema) async {
        let name = URL(fileURLWithPath: CommandLine.arguments.first ?? "fieldmerge").lastPathComponent
        await $context.withValue(Context(schema: schema, commandName: name)) {
            await AppToolCommand.main(nil)
        }
    }

    /// Runs `operation` (an app's own command tree's `main`, with ``SyncCommand`` and
    /// ``SchemaCommand`` as subcommands) with `schema` as the schema they work with.
    public static func withSchema<Result>(
        _ schema: Schema, isolation: isolated (any Actor)? = #isolation, operation: () async throws -> Result
    ) async rethrows -> Result {
        try await $context.withValue(Context(schema: schema, commandName: "fieldmerge"), operation: operation, isolation: isolation)
    }

    /// The app's schema for the commands parsed and run in this task: ArgumentParser makes
    /// the commands from the arguments, so the app's values come this way.
    struct Context: Sendable {
        var schema: Schema
        var commandName: String
    }

    @TaskLocal static var context: Context?

    /// The app's schema, nil in the stock `fieldmerge`.
    static var schema: Schema? { context?.schema }
}

/// The root command of ``FieldMergeTool/main(schema:)``, named after the executable.
struct AppToolCommand: AsyncParsableCommand {
    static var configuration: CommandConfiguration {
        CommandConfiguration(
            commandName: FieldMergeTool.context?.commandName,
            abstract: "Syncs replicas of the app's schema, and compares schema files with it.",
            subcommands: [SyncCommand.self, SchemaCommand.self])
    }
}
