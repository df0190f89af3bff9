import FieldMerge
import FieldMergeProtocol
import FieldMergeSQLite
import FieldMergeSync
import FieldMergeServer
import FieldMergeServerSQLite
import FieldMergeWorkload
import Foundation

/// `fieldmerge simulate --scopes`: devices of several users sync a team app through a server
/// with scopes while an admin changes who sees what (memberships added and removed, tasks
/// moved, a role granted and revoked), and an oracle checks that each device held exactly
/// its user's records, that nothing outside them ever reached it, and that no acknowledged
/// edit was lost (Specs/simulation.md, "Scopes"). `ScopedSimulation(options:).run()` gives
/// a ``ScopedSimulationReport``; its `passed` says whether the oracle found nothing and
/// every device settled (`ScopedSimulationTests` runs small ones).
public final class ScopedSimulation {
    let options: ScopedSimulationOptions
    let progress: Simulation.Progress?
    let directory = TeamDirectory()
    let ledger = FaultLedger()
    let users: [String]
    let folder: String
    let serverWall: ManualWallClock
    var now: UInt64 = 1_767_225_600_000  // 2026-01-01T00:00:00Z
    var random: SplitMix64
    var report: ScopedSimulationReport
    /// The servers in this process: one on SQLite, or those `servers` opened (requests
    /// alternate between them); none with `remote`.
    var endpoints: [ServerEndpoint] = []
    let servers: [ServerOpener]?
    let remote: ScopedRemote?
    /// What each device sends its requests to, in turn: the endpoints, or with `remote` a
    /// transport to each server carrying tokens of the device's user.
    var deviceServers: [[any SyncTransport]] = []
    /// Reads the server's records now (between requests).
    private(set) var serverState: @Sendable () async throws -> TeamState = { throw SimulationError("no server yet") }
    var watch: ScopeWatch!
    var devices: [Device] = []
    var editors: [TeamEditor] = []
    var log = TeamLog()
    /// The marks in the changes each device gave up (kept aside or refused), by device.
    var givenUp: [Int: Set<String>] = [:]
    /// Set by tests to prove the oracle catches what it should: changes the log before the
    /// check, given the server's final records.
    var tamper: ((inout TeamLog, TeamState) -> Void)?
    /// Devices that could not complete a sync in 60 attempts, with the last error: left out
    /// of the rest of the run (reported as unsettled).
    var stuck: [Int: String] = [:]
    /// What the run itself found wrong (probes, changes kept aside), beside the watch's and
    /// the oracle's findings.
    var violations = Violations()

    /// Opens a server on the storage under test with the schema, the options (the rules, the
    /// mode) and the wall clock given.
    public typealias ServerOpener = @Sendable (Schema, RevisionServer.Options, ManualWallClock) async throws -> RevisionServer

    /// - Parameters:
    ///   - servers: Servers on one data set, which must start empty (PostgreSQL: several
    ///     processes serving one database); requests alternate between them. Nil: one server
    ///     on a SQLite file in the run's folder.
    ///   - remote: Servers in other processes instead (over HTTP, with tokens), which must
    ///     start empty; requests alternate between them. They cannot be restarted.
    public init(
        options: ScopedSimulationOptions, progress: Simulation.Progress? = nil, servers: [ServerOpener]? = nil,
        remote: ScopedRemote? = nil
    ) throws {
        guard options.devices >= 2, options.userCount >= 2, options.projects >= 2, options.tasks >= 1, options.rounds >= 0 else {
            throw SimulationError("simulate --scopes needs at least 2 devices, 2 users, 2 projects and 1 task")
        }
        guard servers == nil || remote == nil, remote.map({ !$0.servers.isEmpty }) ?? true else {
            throw SimulationError("a scoped run has servers in this process or remote ones, at least one")
        }
        self.options = options
        self.progress = progress
        self.servers = servers
        self.remote = remote
        users = TeamDirectory.users(options.userCount)
        serverWall = ManualWallClock(milliseconds: now)
        random = SplitMix64(seed: options.seed ^ 0x5C0_9E5)
        folder = Simulation.newFolder(in: options.parentFolder, name: "fieldmerge-scopes", seed: options.seed)
        report = ScopedSimulationReport(options: options)
        report.folder = folder
        report.remoteServers = remote?.servers.count ?? 0
    }

    /// Runs the simulation. Throws only when it cannot run; what the oracle found is in the
    /// report (``ScopedSimulationReport/passed``).
    public func run() async throws -> ScopedSimulationReport {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { finish() }
        try await phase("seed") {
            try await makeServer()
            try await makeDevices()
            try await seed()
        }
        try await phase("rounds") { for round in 0..<options.rounds { try await runRound(round) } }
        try await phase("settle") {
            try await settle()
            try await giveUp()
        }
        try await phase("check") { try await check() }
        return report
    }

    func phase(_ name: String, _ body: () async throws -> Void) async throws {
        let start = ContinuousClock.now
        try await body()
        report.phases.append((name, seconds(since: start)))
    }

    func chance(_ p: Double) -> Bool { p > 0 && Double(random.next() >> 11) / Double(1 << 53) < p }

    private func finish() {
        devices = []
        endpoints = []
        deviceServers = []
        if !options.keepFolder { try? FileManager.default.removeItem(atPath: folder) }
    }

    func path(_ name: String) -> String { (folder as NSString).appendingPathComponent(name) }

    /// The servers, with the team app's scope rules (unless told to leave them out); remote
    /// ones have them from their policy file.
    func makeServer() async throws {
        if let remote {
            let view = RemoteTeamView(remote.servers[0](token(user: "oracle", roles: [TeamSchema.adminRole])))
            serverState = { try await view.read() }
            watch = ScopeWatch(schema: TeamSchema.schema, directory: directory, read: serverState)
            return
        }
        var serverOptions = RevisionServer.Options()
        serverOptions.mode = options.mode
        if options.serverScopes { serverOptions.scopes = TeamSchema.rules }
        let (file, wall, settings) = (path("server.sqlite"), serverWall, serverOptions)
        let sqlite: ServerOpener = { schema, options, wall in try RevisionServer(.file(path: file), schema: schema, options: options, wall: wall) }
        let directory = self.directory
        for opener in servers ?? [sqlite] {
            let open: @Sendable () async throws -> RevisionServer = { try await opener(TeamSchema.schema, settings, wall) }
            endpoints.append(ServerEndpoint(server: try await open(), reopen: open) { directory.identity(of: $0) })
        }
        let endpoint = endpoints[0]
        serverState = { try await endpoint.teamState() }
        watch = ScopeWatch(schema: TeamSchema.schema, directory: directory, read: serverState)
    }

    /// The bearer token of `user`'s requests to remote servers: its roles as they are when
    /// the request is sent, as a fresh token from an identity provider would say.
    func token(user: String, roles: Set<String>? = nil) -> ScopedRemote.Token {
        let (tokens, directory) = (remote?.tokens, self.directory)
        return { _ in tokens?.token(user: user, roles: roles ?? directory.roles(of: user)) }
    }

    /// The client id device `index` sends its probes under (the same user, its own replies).
    func probeClient(_ index: Int) -> String { "probe-\(index)" }

    /// Each device, a new store, belongs to user `index % users`; `u0` is an admin.
    func makeDevices() async throws {
        directory.setRoles([TeamSchema.adminRole], of: users[0])
        for index in 0..<options.devices {
            let user = users[index % users.count]
            let replica = Device.firstReplica + UInt64(index)
            directory.register(client: String(replica, radix: 16), user: user)
            directory.register(client: probeClient(index), user: user)
            let skew = Device.skew(&random, rate: options.faults.skew, ledger: ledger)
            let wall = ManualWallClock(milliseconds: UInt64(Int64(now) + skew))
            let file = path("device-\(index).sqlite")
            let store = try Store(.file(path: file), schema: TeamSchema.schema, replica: ReplicaID(replica), wall: wall)
            deviceServers.append(remote.map { remote in remote.servers.map { $0(token(user: user)) } } ?? endpoints)
            let watched = WatchedTransport(deviceServers[index], device: index, watch: watch)
            let transport = FaultyTransport(watched, rates: options.faults, seed: options.seed &+ UInt64(index) &* 0x9E37_79B9, ledger: ledger)
            devices.append(await Device(index: index, path: file, store: store, wall: wall, skew: skew, transport: transport, ledger: ledger))
            var editor = TeamEditor(device: index, user: user, seed: options.seed ^ (UInt64(index + 1) << 32))
            editor.moves = options.usersMove
            editors.append(editor)
        }
    }

    /// The admin's first device creates the users, projects, memberships (each other user
    /// in one to three projects), tasks and comments, and syncs; then every device syncs.
    func seed() async throws {
        let (users, projectCount, taskCount, seed) = (self.users, options.projects, options.tasks, options.seed &+ 0x7EA)
        (editors[0], log) = try await devices[0].edit(with: editors[0]) { editor, store in
            var random = SplitMix64(seed: seed)
            for user in users { _ = try store.insert("users", values: [.text(user), .text("new")]) }
            let projects = try (0..<projectCount).map { try store.insert("projects", values: [.text("Project \($0)")]) }
            for user in users.dropFirst() {
                var mine = projects
                for i in mine.indices.reversed() where i > 0 { mine.swapAt(i, random.below(i + 1)) }
                for project in mine.prefix(1 + random.below(3)) { _ = try store.insert("memberships", values: [.text(user), .integer(project)]) }
            }
            return try editor.seedTasks(store, projects: projects, count: taskCount)
        }
        try await watch.look()
        for (index, device) in devices.enumerated() {
            try await sync(device)
            progress?("seed", index + 1, devices.count)
        }
        report.seededRecords = try await serverState().rows.values.reduce(0) { $0 + $1.count }
    }
}
