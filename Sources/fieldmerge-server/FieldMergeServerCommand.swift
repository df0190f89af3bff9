import ArgumentParser
import FieldMergeServeCommand
import FieldMergeSimulation

#if !Server || !Tools
#error("fieldmerge-server needs the package traits Server and Tools (both on by default)")
#endif

/// `fieldmerge-server`: the HTTP server and its load bench, apart from `fieldmerge` so that
/// the device-side commands build without Hummingbird, PostgresNIO or JWTKit
/// (Specs/architecture.md).
@main
struct FieldMergeServerCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fieldmerge-server",
        abstract: "Serves the revision protocol over HTTP on SQLite or PostgreSQL (Specs/http.md).",
        discussion: "Without a sub-command, runs serve. `fieldmerge serve` runs this executable when it lies beside fieldmerge.",
        subcommands: [ServeCommand.self, ServerBenchCommand.self, ServerAdminCommand.self],
        defaultSubcommand: ServeCommand.self
    )

    /// `serve` is FieldMergeServeCommand's, with the built-in strategies only and, without
    /// `--schema`, the simulation's league schema (Specs/simulation.md), so that
    /// `fieldmerge simulate --server URL` runs against it.
    static func main() async {
        await FieldMergeServe.withConfiguration(ServeConfiguration(schema: .file(fallback: LeagueSchema.schema))) {
            await Self.main(nil)
        }
    }
}

/// `fieldmerge-server bench`: the server's benches (Specs/benchmarks.md, "serve").
struct ServerBenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Measures the server over HTTP; prints one JSON line per setup.",
        subcommands: [ServeBench.self, LiveBench.self, UploadBench.self],
        defaultSubcommand: ServeBench.self
    )
}
