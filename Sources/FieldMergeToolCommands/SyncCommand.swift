import ArgumentParser
import FieldMerge
import FieldMergeJSON
import FieldMergeSyncTool
import Foundation

/// `fieldmerge sync`: syncs one replica file with a server over HTTP (Specs/cli.md); under
/// the app's Swift schema in an app's own executable (``FieldMergeTool``).
public struct SyncCommand: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "sync",
        abstract: "Syncs a replica SQLite file with a server's POST /sync, creating the replica on first use.",
        discussion: """
            Sends the replica's pending changes (also those made with plain SQL on its tables) \
            and downloads what it misses, page by page, each page applied in one transaction. \
            Shows a progress line when standard error is a terminal, and prints a summary at \
            the end (--json: one JSON object). Exit codes: \
            \(ReplicaSyncExit.allCases.map { "\($0.rawValue) \($0.meaning)" }.joined(separator: "; ")). \
            See Specs/cli.md.
            """
    )

    @Option(help: "The server's sync endpoint, e.g. http://127.0.0.1:8080/sync.")
    var url: String

    @Option(help: "The replica's SQLite file; created when missing.")
    var replica: String

    @Option(help: "The schema file (Specs/schema.md), the one the server serves. An app's own tool with its schema in Swift refuses it.")
    var schema: String?

    @Option(help: "A file holding a bearer token (JWT), read before each request.")
    var tokenFile: String?

    @Option(help: "At most this many requests per sync.")
    var rounds: Int = 1_000

    @Flag(help: "Keep syncing through failures the server may recover from (unreachable, restarting) and past --rounds, until settled or --timeout.")
    var untilSettled = false

    @Option(help: "Seconds --until-settled keeps trying.")
    var timeout: Double = 60

    @Option(help: "Records per request and per catch-up page.")
    var batchSize: Int = 10_000

    @Option(help: "The replica's page cache in KiB while it downloads the data set from revision 0 (a new replica); 0 keeps the store's 32 MiB.")
    var downloadCacheKib: Int = 2_048

    @Flag(inversion: .prefixedNo, help: "Gzip request bodies.")
    var gzip = true

    @Flag(help: "Print the summary as one JSON object on standard output.")
    var json = false

    @Flag(help: "After syncing, keep the replica in step with the server (live sync: its event stream, long-poll as fallback) until SIGINT or SIGTERM; one line per event on standard error.")
    var live = false

    public init() {}

    public func validate() throws {
        guard downloadCacheKib >= 0 else { throw ValidationError("--download-cache-kib \(downloadCacheKib): give 0 or more KiB") }
        switch (FieldMergeTool.schema, schema) {
        case (let app?, let file?):
            throw ValidationError(
                "--schema \(file): this tool syncs under its app's schema, given in Swift (version \(app.version)); it reads no schema file")
        case (nil, nil): throw ValidationError("give --schema FILE, the schema file the server serves (Specs/schema.md)")
        default: return
        }
    }

    public func run() async throws {
        ProcessMemory.limit()
        var input = FieldMergeTool.schema.map { ReplicaSyncInput(url: url, replica: replica, schema: $0, tokenFile: tokenFile) }
            ?? ReplicaSyncInput(url: url, replica: replica, schema: schema ?? "", tokenFile: tokenFile)
        input.maxRounds = rounds
        input.untilSettled = untilSettled
        input.settleTimeout = timeout
        input.batchSize = batchSize
        input.downloadPageCacheKiB = downloadCacheKib > 0 ? downloadCacheKib : nil
        input.gzip = gzip
        input.live = live
        let line = SyncProgressLine()
        let interruption = Interruption()
        let outcome = await ReplicaSync.run(
            input, progress: { line.show($0) },
            live: { FileHandle.standardError.write(Data("fieldmerge sync: live: \(LiveLine.text($0))\n".utf8)) },
            stop: { await interruption.wait() })
        line.finish()
        let report = ReplicaSyncReport(input: input, outcome: outcome)
        if json {
            FileHandle.standardOutput.write(Data((report.json.rendered() + "\n").utf8))
            if outcome.exit != .settled {
                FileHandle.standardError.write(Data("fieldmerge sync: \(outcome.exit) (exit code \(outcome.exit.rawValue))\n".utf8))
            }
        } else if outcome.exit == .settled {
            FileHandle.standardOutput.write(Data(report.text.utf8))
        } else {
            FileHandle.standardError.write(Data(report.text.utf8))
        }
        if outcome.exit != .settled { throw ExitCode(outcome.exit.rawValue) }
    }
}
