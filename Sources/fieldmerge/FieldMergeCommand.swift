import ArgumentParser

@main
struct FieldMergeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fieldmerge",
        abstract: "Field-wise three-way merge and sync for offline SQLite replicas.",
        subcommands: [SimulateCommand.self, ServeCommand.self, SyncCommand.self, MergeCommand.self, SchemaCommand.self, BenchCommand.self]
    )
}
