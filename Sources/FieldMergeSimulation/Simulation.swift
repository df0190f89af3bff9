import FieldMerge
import FieldMergeSQLite
import FieldMergeSync
import FieldMergeProtocol
import FieldMergeServer
import FieldMergeWorkload
import Foundation

/// `fieldmerge simulate`: many offline devices, each with its own SQLite file, editing the
/// same league data and syncing through one server in a random (seeded) order, with faults if
/// asked; at the end every device syncs until settled, and the run checks that every replica
/// holds the same data and that the oracle finds no edit lost (Specs/simulation.md).
///
/// ```swift
/// var options = SimulationOptions()
/// (options.devices, options.records, options.rounds) = (5, 1_000, 3)   // a small run
/// let report = try await Simulation(options: options).run()
/// print(report.rendered())   // report.passed says whether it converged with nothing lost
/// ```
public final class Simulation {
    /// Progress: the phase, how much of it is done, out of how much.
    public typealias Progress = @Sendable (_ phase: String, _ done: Int, _ total: Int) -> Void

    let options: SimulationOptions
    /// The league schema; ``LeagueSchema/upgraded`` after an upgrade.
    var schema = LeagueSchema.schema
    let remote: (any SyncTransport)?
    /// With a remote server and live mode: the channels to it, device *i* on `i % count`.
    let remoteLive: [any LiveChannel]
    let liveTally = LiveTally()
    let progress: Progress?
    let ledger = FaultLedger()
    let seedData: SeedData
    let folder: String
    let serverWall: ManualWallClock
    var report: SimulationReport
    var random: SplitMix64
    /// The simulation's time, in wall-clock milliseconds (the server's clock).
    var now: UInt64
    var endpoint: ServerEndpoint!
    var devices: [Device] = []
    var generators: [EditGenerator] = []
    var late: [(name: String, client: SyncClient)] = []
    var oracle: Oracle
    /// What the devices kept aside because the server refused it (collected after settling).
    var parked: Set<Oracle.Parked> = []
    /// Set by tests to prove the checks catch what they should: `tamper` changes the oracle's
    /// log before the check; `sabotage` writes behind the last device's back before it.
    var tamper: ((inout Oracle) -> Void)?
    var sabotage: (@Sendable (Store) throws -> Void)?
    /// Set by tests: changes what the devices are said to have kept aside, before the check.
    var tamperParked: ((inout Set<Oracle.Parked>) -> Void)?

    /// Catch-up page size for the devices: small enough that the bootstrap download and the
    /// late joiners page (pages carry the parents of their records).
    static let pageSize = 5_000

    /// - Parameters:
    ///   - remote: A transport to a remote server (which must start empty); nil runs a
    ///     ``RevisionServer`` in this process.
    ///   - remoteLive: With `remote` and live mode: live channels to the remote server (or
    ///     to each of its processes); device *i* uses channel `i % remoteLive.count`.
    ///   - progress: Called as phases advance.
    public init(
        options: SimulationOptions, remote: (any SyncTransport)? = nil, remoteLive: [any LiveChannel] = [], progress: Progress? = nil
    ) throws {
        guard options.devices >= 1, options.records >= LeagueSchema.entities.count, options.rounds >= 0 else {
            throw SimulationError("simulate needs at least 1 device and \(LeagueSchema.entities.count) records")
        }
        self.options = options
        guard !options.live || remote == nil || !remoteLive.isEmpty else {
            throw SimulationError("live mode with a remote server needs live channels to it")
        }
        self.remote = remote
        self.remoteLive = remoteLive
        self.progress = progress
        random = SplitMix64(seed: options.seed)
        now = 1_767_225_600_000  // 2026-01-01T00:00:00Z
        serverWall = ManualWallClock(milliseconds: now)
        seedData = SeedData(schema: LeagueSchema.schema, records: options.records, seed: options.seed, start: now)
        oracle = Oracle(seed: seedData)
        folder = Self.newFolder(in: options.parentFolder, name: "fieldmerge-simulate", seed: options.seed)
        report = SimulationReport(options: options)
        report.folder = folder
    }

    /// Runs the simulation. Throws only when it cannot run (a device that never completes a
    /// sync, storage errors); divergence and loss are in the report (``SimulationReport/passed``).
    public func run() async throws -> SimulationReport {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { finish() }
        try await phase("seed") { try await seed() }
        try await phase("devices") {
            try await makeDevices()
            if options.live { await startLive() }
        }
        try await phase("rounds") {
            for round in 0..<options.rounds { try await runRound(round) }
        }
        if options.live { try await phase("live") { try await convergeLive() } }
        try await phase("settle") {
            try await settle()
            try await collectRefusedChanges()
        }
        if options.bootstrap { try await phase("bootstrap") { try await bootstrap() } }
        try await phase("check") { try await check() }
        return report
    }

    func phase(_ name: String, _ body: () async throws -> Void) async throws {
        let start = ContinuousClock.now
        try await body()
        let elapsed = ContinuousClock.now - start
        report.phases.append((name, Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18))
    }

    /// A coin that comes up true with probability `p`.
    func chance(_ p: Double) -> Bool { p > 0 && Double(random.next() >> 11) / Double(1 << 53) < p }

    /// Closes every store and removes the folder unless asked to keep it.
    private func finish() {
        devices = []
        late = []
        endpoint = nil
        if !options.keepFolder { try? FileManager.default.removeItem(atPath: folder) }
    }

    func path(_ name: String) -> String { (folder as NSString).appendingPathComponent(name) }

    /// A folder of its own for one run, in `parent` (the system's temporary folder if nil).
    static func newFolder(in parent: String?, name: String, seed: UInt64) -> String {
        ((parent ?? NSTemporaryDirectory()) as NSString).appendingPathComponent("\(name)-\(seed)-\(UUID().uuidString.prefix(8))")
    }
}
