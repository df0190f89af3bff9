import ArgumentParser
import FieldMergeToolCommands

@main
struct FieldMergeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fieldmerge",
        abstract: "Field-wise three-way merge and sync for offline SQLite replicas.",
        discussion: "The server (serve, bench serve) is a second executable, fieldmerge-server: see `fieldmerge-server --help`.",
        subcommands: [SimulateCommand.self, SyncCommand.self, MergeCommand.self, SchemaCommand.self, AdminCommand.self, BenchCommand.self, ServeForwarding.self]
    )

    static func main() async {
        // Before any thread allocates: `sync` holds its memory (`ProcessMemory`).
        if CommandLine.arguments.dropFirst().first == "sync" { ProcessMemory.limit() }
        await main(nil)
    }
}
