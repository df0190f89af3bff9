import ArgumentParser
import FieldMergeSimulation
import FieldMergeSync
import FieldMergeProtocol
import FieldMergeServer
import FieldMergeSyncHTTP
import Foundation

struct SimulateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "simulate",
        abstract: "Runs many offline devices against one server and checks they converge.",
        discussion: """
            Each device has its own SQLite file in a temporary folder; they edit the league \
            schema offline and sync in a random order, then sync until settled. The run checks \
            that every device and the server hold identical data and that no edit the merge \
            rules keep was lost (Specs/simulation.md). Exit code 1 on divergence or loss.
            """
    )

    @Option(help: "Devices (default 50; with --scopes 12; with --attachments 6).") var devices: Int?
    @Option(help: "Records seeded before the first round (default 100,000; with --scopes: tasks, default 200).") var records: Int?
    @Option(help: "Rounds of offline edits and syncs.") var rounds = 10
    @Option(help: "The seed of every random choice.") var seed: UInt64 = 1
    @Option(help: "Edits per device that goes offline in a round (default 20; with --attachments 3).") var edits: Int?
    @Flag(help: "Inject faults (standard rates, or the rate spec that follows).") var faults = false
    @Argument(help: ArgumentHelp(
        "With --faults: one rate for every fault (e.g. 0.1), or key=rate pairs of drop, lose, dup, delay, corrupt, crash, skew, restart, disconnect (e.g. lose=0.1,crash=0.05).",
        valueName: "rate spec"))
    var rateSpec: String?
    @Option(help: "The in-process server's mode: strict or merge.") var mode: String = "strict"
    @Option(help: ArgumentHelp(
        "Sync with the server at this URL instead of one in this process (it must start empty); repeat it for several processes serving one data set: requests alternate between them.",
        valueName: "url"))
    var server: [String] = []
    @Flag(help: "Keep the temporary folder with every device's and the server's files.") var keep = false
    @Flag(help: "Skip the late-joining devices (snapshot and full download).") var noBootstrap = false
    @Flag(inversion: .prefixedNo, help: "Delete records others reference and create under any record (--no-cascades keeps to leaves).")
    var cascades = true
    @Flag(inversion: .prefixedNo, help: "The in-process server refuses some devices' updates of some venues; the run checks they are kept aside.")
    var refusals = true
    @Option(help: "Every Nth device writes its field updates with plain SQL through a second connection (0: none).")
    var plainSQLEvery = 3
    @Flag(help: "A third of the way through, move the server and every device to schema version 2 (their files migrate).")
    var upgrade = false
    @Flag(help: "A sleeper: device 0 syncs once, then edits offline until the last round; halfway, the server compacts every tombstone, so it wakes behind the horizon and rebases (Specs/simulation.md).")
    var sleeper = false
    @Flag(help: "Live mode: devices keep a live channel open and never sync explicitly until live mode has converged (Specs/simulation.md, Live mode).")
    var live = false
    @Flag(help: "Scoped sync: a team app whose users see only their projects, while an admin changes who sees what (Specs/simulation.md, Scopes).")
    var scopes = false
    @Flag(help: "Attachments: devices attach files to records offline and sync them while transfers are cut off, the server and the apps restart and garbage is collected (Specs/simulation.md, Attachments).")
    var attachments = false
    @Option(help: "With --attachments: distinct files attached.") var files = 24
    @Option(help: "With --attachments: the largest file in KiB (the smallest is 1 KiB).") var maxFileKib = 20_480
    @Option(help: "With --scopes: users (u0 is an admin; default half the devices, 2 to 6).") var users: Int?
    @Option(help: "With --scopes: projects.") var projects = 8
    @Flag(inversion: .prefixedNo, help: "With --scopes: users' devices move tasks between their projects.") var usersMove = true
    @Flag(inversion: .prefixedNo, help: "With --scopes: half the writes sent outside the scope on purpose name an older revision.")
    var staleProbes = true
    @Option(help: ArgumentHelp(
        "With --scopes --server: sign each device's bearer token (HS256) with the secret in this file, as the servers' --jwt-secret-file.",
        valueName: "file"))
    var jwtSecretFile: String?
    @Option(help: ArgumentHelp(
        "With --scopes: write the files `fieldmerge serve` needs to serve a scoped run (schema.json, policy.json, a new jwt-secret) into this folder, print the serve options, and exit.",
        valueName: "folder"))
    var serverFiles: String?

    func run() async throws {
        if attachments && scopes { throw ValidationError("--attachments and --scopes are separate runs") }
        if attachments { return try await runAttachments() }
        if scopes { return try await runScoped() }
        if users != nil || jwtSecretFile != nil || serverFiles != nil {
            throw ValidationError("--users, --jwt-secret-file and --server-files need --scopes")
        }
        var options = SimulationOptions()
        (options.devices, options.records, options.rounds, options.seed) = (devices ?? 50, records ?? 100_000, rounds, seed)
        options.editsPerDevice = edits ?? 20
        options.keepFolder = keep
        options.bootstrap = !noBootstrap
        options.cascadingDeletes = cascades
        options.refusals = refusals
        guard plainSQLEvery >= 0 else { throw ValidationError("--plain-sql-every: 0 or more") }
        options.plainSQLEvery = plainSQLEvery
        if upgrade && !server.isEmpty { throw ValidationError("--upgrade needs the server in this process (no --server)") }
        options.upgrade = upgrade
        if sleeper && (!server.isEmpty || live) { throw ValidationError("--sleeper needs the server in this process (no --server) and no --live") }
        if sleeper && rounds < 3 { throw ValidationError("--sleeper needs at least 3 rounds") }
        options.sleeper = sleeper
        options.live = live
        if rateSpec != nil && !faults { throw ValidationError("a rate spec needs --faults") }
        if faults { options.faults = try FaultRates(spec: rateSpec ?? "") }
        guard let mode = RevisionServer.Mode(rawValue: mode) else { throw ValidationError("--mode: strict or merge") }
        options.mode = mode
        let urls = try server.map { try remoteSyncURL($0) }
        let remotes: [any SyncTransport] = urls.map { HTTPTransport(url: $0) }
        let remote: (any SyncTransport)? = remotes.count > 1 ? AlternatingTransport(remotes) : remotes.first
        let channels: [any LiveChannel] = live ? urls.map { HTTPLiveChannel(syncURL: $0) } : []
        let simulation = try Simulation(options: options, remote: remote, remoteLive: channels, progress: ProgressLine.make())
        let report = try await simulation.run()
        ProgressLine.finish()
        print(report.rendered())
        if !report.passed { throw ExitCode(1) }
    }
}

/// The `/sync` URL of `--server`: the base URL of `fieldmerge serve`, or its `/sync` URL.
func remoteSyncURL(_ text: String) throws -> URL {
    guard var url = URL(string: text), let scheme = url.scheme, ["http", "https"].contains(scheme), url.host != nil else {
        throw ValidationError("--server: '\(text)' is not an http(s) URL")
    }
    if url.path.isEmpty || url.path == "/" { url = url.appendingPathComponent("sync") }
    return url
}

/// Progress on standard error: a bar redrawn in place on a terminal, plain lines otherwise.
enum ProgressLine {
    static func make() -> Simulation.Progress {
        let terminal = isatty(STDERR_FILENO) == 1
        return { phase, done, total in
            if terminal {
                let width = 30, filled = total > 0 ? min(width, done * width / total) : width
                let bar = String(repeating: "#", count: filled) + String(repeating: " ", count: width - filled)
                FileHandle.standardError.write(Data("\r\u{1B}[K\(phase) [\(bar)] \(done)/\(total)".utf8))
            } else if done == total || done % max(1, total / 10) == 0 {
                FileHandle.standardError.write(Data("\(phase): \(done)/\(total)\n".utf8))
            }
        }
    }

    static func finish() {
        if isatty(STDERR_FILENO) == 1 { FileHandle.standardError.write(Data("\r\u{1B}[K".utf8)) }
    }
}
