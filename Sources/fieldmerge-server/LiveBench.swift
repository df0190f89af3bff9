import ArgumentParser
import FieldMerge
import FieldMergeProtocol
import FieldMergeSQLite
import FieldMergeServer
import FieldMergeServerPostgres
import FieldMergeSimulation
import FieldMergeSync
import FieldMergeSyncHTTP
import FieldMergeSyncNIO
import FieldMergeToolSupport
import Foundation
import Synchronization

/// Live sync on loopback (Specs/benchmarks.md, "live"): many devices in live mode over
/// `GET /sync/events`, one more device writes. Reports the time from the writer's `sync()`
/// returning until every other device has the change in its store (p50, p99, max), the
/// server's memory with every device subscribed and idle, and a burst of writes.
struct LiveBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "live",
        abstract: "Live sync: time until every live device has one device's write (p50, p99), server RSS with idle subscribers, a burst."
    )

    @Option(help: "Live devices (each its own store, transport and event stream).") var devices = 1_000
    @Option(help: "Single writes measured, one after another.") var writes = 20
    @Option(help: "Writes of the burst, sent within one second.") var burst = 100
    @Option(help: "Records of the large write: one write whose page is more than 256 KiB of JSON, which the devices read gzip'd (changes-gzip); timed like a single write; 0 skips it.")
    var largeWrite = 1_000
    @Option(help: "PostgreSQL URL for the postgres2 setup (default: $FIELDMERGE_POSTGRES_URL).") var postgres: String?
    @Option(help: "Setups, comma separated: sqlite, postgres2 (two serve processes on one PostgreSQL data set; default: all that can run).") var setups: String?
    @Option(help: "The devices' live channel: nio (NIOLiveChannel, every stream on the process's event loops) or urlsession (HTTPLiveChannel, one URLSession each).")
    var channel: LiveFleet.ChannelKind = .nio
    @Option(help: "Executors the devices share (0: a serial queue each, as each app has; N: device i runs on executor i mod N, so the fleet is not 1,000 threads on this machine's cores).")
    var deviceExecutors = 0

    func validate() throws {
        guard devices >= 1, devices <= 10_000 else { throw ValidationError("--devices: 1...10000") }
        guard deviceExecutors >= 0, deviceExecutors <= devices else { throw ValidationError("--device-executors: 0...devices") }
        guard writes >= 1, writes <= 10_000 else { throw ValidationError("--writes: 1...10000") }
        guard burst >= 0, burst <= 10_000 else { throw ValidationError("--burst: 0...10000") }
        guard largeWrite >= 0, largeWrite <= 100_000 else { throw ValidationError("--large-write: 0...100000") }
    }

    func run() async throws {
        try await BenchSetups(setups, postgres: postgres, known: ["sqlite", "postgres2"]).run(measure)
    }

    private func measure(_ setup: String, postgres: String?) async throws -> BenchLine {
        let folder = NSTemporaryDirectory() + "fieldmerge-live-bench-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let dataSet = "fm_live_\(UInt32.random(in: 0...UInt32.max))"
        // Room for every device's stream and its requests; streams that outlive the bench.
        let limits = ["--max-connections", String(devices * 2 + 256), "--live-lifetime", "3600"]
        let arguments: [[String]] = setup == "sqlite"
            ? [["--db", folder + "/server.sqlite"] + limits]
            : Array(repeating: ["--postgres", postgres!, "--postgres-schema", dataSet] + limits, count: 2)
        var servers: [ServeProcess] = []
        defer { for server in servers { server.stop() } }
        for extra in arguments { servers.append(try ServeProcess.start(extra)) }
        let urls = servers.map(\.url)
        let baseRSS = servers.compactMap(\.residentMegabytes).reduce(0, +)

        let started = ContinuousClock.now
        let fleet = try await LiveFleet.start(devices: devices, urls: urls, channel: channel, executors: deviceExecutors)
        guard await fleet.tracker.wait(for: { $0.connectedCount == devices }, limit: .seconds(120)) else {
            throw ValidationError("only \(fleet.tracker.connectedCount) of \(devices) devices connected within 120 s")
        }
        let connectSeconds = LiveTracker.seconds(ContinuousClock.now - started)
        let idleCPUBefore = processCPUSeconds()
        try await Task.sleep(for: .seconds(2))
        // What 1,000 idle devices cost this process while nothing changes, in % of one core.
        let idleDevicePercent = (processCPUSeconds() - idleCPUBefore) / 2 * 100
        let idleRSS = servers.compactMap(\.residentMegabytes).reduce(0, +)

        let writer = try LiveWriter(url: urls[0])
        var missed = 0
        // Each single write follows a quiet spell longer than the hub's least interval between
        // steps, so that it is read at once, as one write after a pause is; writes closer
        // together wait for the interval by design (the burst below measures those).
        let quiet = LiveHub.Options().minInterval + .milliseconds(50)
        /// One write, timed until every device holds it; when the next write may start.
        func deliver() async throws -> (delays: [Double], next: ContinuousClock.Instant) {
            let (revision, returned) = try await writer.writeOne()
            fleet.tracker.arm(revision, at: returned)
            if !(await fleet.tracker.wait(for: { $0.reached == devices }, limit: .seconds(30))) { missed += 1 }
            return (fleet.tracker.delays().sorted(), returned + quiet)
        }
        // The first write after connecting, apart: each device's first delivery also
        // prepares its store's statements for a page.
        let (cold, afterCold) = try await deliver()
        try await Task.sleep(until: afterCold)
        var delays: [Double] = []
        let cpuBefore = processCPUSeconds()
        let serverCPUBefore = servers.compactMap(\.cpuSeconds).reduce(0, +)
        for _ in 0..<writes {
            let round = try await deliver()
            delays += round.delays
            try await Task.sleep(until: round.next)
        }
        // The devices' side of one delivery: this process's CPU time over the single writes
        // (the writer's and the bench's share is small), per device and write.
        let deviceMicroseconds = (processCPUSeconds() - cpuBefore) * 1e6 / Double(writes * devices)
        // The servers' side: their CPU time over the same span (the writer's requests
        // included), per device and write.
        let serverMicroseconds = (servers.compactMap(\.cpuSeconds).reduce(0, +) - serverCPUBefore) * 1e6 / Double(writes * devices)
        // The large write: one page that only goes in the stream gzip'd (more than `maxBytes`
        // of JSON); a larger one than the hub's `maxRecords` goes as a poke, and each device syncs.
        var large: [Double] = []
        var largeSyncs = 0
        var largeDeviceMilliseconds = Double.nan
        if largeWrite > 0 {
            let syncsBefore = fleet.tracker.syncs
            let largeCPUBefore = processCPUSeconds()
            let (revision, called) = try await writer.write(records: largeWrite)
            fleet.tracker.arm(revision, at: called)
            if !(await fleet.tracker.wait(for: { $0.reached == devices }, limit: .seconds(60))) { missed += 1 }
            large = fleet.tracker.delays().sorted()
            largeSyncs = fleet.tracker.syncs - syncsBefore
            largeDeviceMilliseconds = (processCPUSeconds() - largeCPUBefore) * 1e3 / Double(devices)
            try await Task.sleep(for: .milliseconds(100))
        }
        // The burst: ten writers, each writing its share one after another, paced over a second.
        var (burstMilliseconds, burstWriteMilliseconds, burstTailMilliseconds) = (Double.nan, Double.nan, Double.nan)
        if burst > 0 {
            let writers = try (0..<min(10, burst)).map { index in try LiveWriter(url: urls[index % urls.count], replica: UInt64(0xF000 + index)) }
            let begin = ContinuousClock.now
            let finals = try await withThrowingTaskGroup(of: (Int64, ContinuousClock.Instant).self) { group in
                for (index, writer) in writers.enumerated() {
                    let share = burst / writers.count + (index < burst % writers.count ? 1 : 0)
                    group.addTask {
                        var last: (Int64, ContinuousClock.Instant) = (0, begin)
                        for step in 0..<share {
                            last = try await writer.writeOne()
                            let due = begin + .milliseconds(1_000 * (step + 1) / max(share, 1))
                            if ContinuousClock.now < due { try await Task.sleep(until: due) }
                        }
                        return last
                    }
                }
                var finals: [(Int64, ContinuousClock.Instant)] = []
                for try await last in group { finals.append(last) }
                return finals
            }
            let target = finals.map(\.0).max() ?? 0
            let written = finals.map(\.1).max() ?? begin
            // Every device must hold every write: the server's revision after the last one.
            fleet.tracker.arm(target, at: written)
            if await fleet.tracker.wait(for: { $0.reached == devices }, limit: .seconds(60)) {
                burstMilliseconds = LiveTracker.seconds(fleet.tracker.lastArrival - begin) * 1_000
                burstWriteMilliseconds = LiveTracker.seconds(written - begin) * 1_000
                burstTailMilliseconds = LiveTracker.seconds(fleet.tracker.lastArrival - written) * 1_000
            }
        }
        let requests = fleet.tracker.syncs
        await fleet.stop()
        for server in servers { server.stop() }
        servers = []
        if setup != "sqlite", let postgres {
            let connector = PostgresConnector(try PostgresURL(postgres))
            try? await connector.removeDataSet(named: dataSet)
            await connector.shutdown()
        }
        let sorted = delays.sorted()
        func percentile(_ p: Double, of sorted: [Double]) -> Double {
            sorted.isEmpty ? .nan : sorted[min(sorted.count - 1, max(0, Int((Double(sorted.count) * p).rounded(.up)) - 1))] * 1_000
        }
        var line = BenchLine(
            step: "live", records: devices, seconds: LiveTracker.seconds(ContinuousClock.now - started), runs: writes,
            ops: sorted.count, opUnit: "delivery")
        line.add("processes", urls.count)
        line.add("channel", channel.rawValue)
        line.add("device_executors", deviceExecutors)
        line.add("connect_s", connectSeconds)
        line.add("p50_ms", percentile(0.5, of: sorted))
        line.add("p99_ms", percentile(0.99, of: sorted))
        line.add("max_ms", percentile(1, of: sorted))
        line.add("cold_p50_ms", percentile(0.5, of: cold))
        line.add("cold_max_ms", percentile(1, of: cold))
        line.add("missed_writes", missed)
        line.add("large_write_records", largeWrite)
        line.add("large_p50_ms", percentile(0.5, of: large))
        line.add("large_p99_ms", percentile(0.99, of: large))
        line.add("large_max_ms", percentile(1, of: large))
        line.add("large_device_syncs", largeSyncs)
        line.add("large_device_cpu_ms", largeDeviceMilliseconds)
        line.add("burst_writes", burst)
        line.add("burst_all_ms", burstMilliseconds)
        line.add("burst_writes_ms", burstWriteMilliseconds)
        line.add("burst_tail_ms", burstTailMilliseconds)
        line.add("device_syncs", requests)
        line.add("device_cpu_us", deviceMicroseconds)
        line.add("server_cpu_us", serverMicroseconds)
        line.add("devices_idle_cpu_pct", idleDevicePercent)
        line.add("server_rss_base_mb", baseRSS)
        line.add("server_rss_idle_mb", idleRSS)
        line.add("client_rss_peak_mb", peakResidentMegabytes())
        return line
    }
}

/// The devices of the bench, each in live mode, and what they reached.
struct LiveFleet {
    let clients: [SyncClient]
    let watchers: [Task<Void, Never>]
    let tracker: LiveTracker

    /// Which live channel each device opens.
    enum ChannelKind: String, ExpressibleByArgument, Sendable {
        case nio
        case urlsession

        func channel(_ url: URL) throws -> any LiveChannel {
            switch self {
            case .nio: try NIOLiveChannel(syncURL: url)
            case .urlsession: HTTPLiveChannel(syncURL: url)
            }
        }
    }

    static func start(devices: Int, urls: [URL], channel kind: ChannelKind, executors count: Int = 0) async throws -> LiveFleet {
        let schema = LeagueSchema.schema
        let tracker = LiveTracker(devices: devices)
        var clients: [SyncClient] = []
        var watchers: [Task<Void, Never>] = []
        let executors = (0..<count).map { DatabaseExecutor(label: "bench.devices.\($0)") }
        for index in 0..<devices {
            let url = urls[index % urls.count]
            let client = SyncClient(
                store: try Store(.memory, schema: schema, replica: ReplicaID(UInt64(0x1_0000 + index))), transport: HTTPTransport(url: url),
                executor: executors.isEmpty ? nil : executors[index % executors.count])
            let outcomes = await client.startLive(over: try kind.channel(url))
            clients.append(client)
            watchers.append(Task {
                for await outcome in outcomes {
                    switch outcome {
                    case .connected: tracker.connected(index)
                    case .applied(_, let revision): tracker.reached(index, revision)
                    case .synced(_, let revision):
                        tracker.synced()
                        tracker.reached(index, revision)
                    case .syncFailed, .disconnected: break
                    }
                }
            })
        }
        return LiveFleet(clients: clients, watchers: watchers, tracker: tracker)
    }

    func stop() async {
        for client in clients { await client.stopLive() }
        for watcher in watchers { await watcher.value }
        for client in clients { await client.close() }
    }
}

/// Where each device stands, and when each reached the revision the bench waits for.
final class LiveTracker: Sendable {
    struct State {
        var connected: Set<Int> = []
        var cursors: [Int64]
        var target: Int64 = .max
        var armedAt = ContinuousClock.now
        var arrivals: [Int: ContinuousClock.Instant] = [:]
        var syncs = 0
        var reached: Int { arrivals.count }
        var connectedCount: Int { connected.count }
    }

    private let state: Mutex<State>

    init(devices: Int) { state = Mutex(State(cursors: Array(repeating: 0, count: devices))) }

    func connected(_ device: Int) { state.withLock { _ = $0.connected.insert(device) } }
    func synced() { state.withLock { $0.syncs += 1 } }
    var syncs: Int { state.withLock { $0.syncs } }
    var connectedCount: Int { state.withLock { $0.connected.count } }

    func reached(_ device: Int, _ revision: Int64) {
        state.withLock { state in
            state.cursors[device] = max(state.cursors[device], revision)
            if revision >= state.target, state.arrivals[device] == nil { state.arrivals[device] = .now }
        }
    }

    /// Waits for `target`: devices already there count as arrived at `at`.
    func arm(_ target: Int64, at instant: ContinuousClock.Instant) {
        state.withLock { state in
            state.target = target
            state.armedAt = instant
            state.arrivals = [:]
            for (device, cursor) in state.cursors.enumerated() where cursor >= target { state.arrivals[device] = instant }
        }
    }

    /// Each device's delay after the armed instant, in seconds.
    func delays() -> [Double] {
        state.withLock { state in state.arrivals.values.map { max(0, Self.seconds($0 - state.armedAt)) } }
    }

    var lastArrival: ContinuousClock.Instant { state.withLock { $0.arrivals.values.max() ?? $0.armedAt } }

    /// Polls `condition` every 5 ms up to `limit`; whether it held.
    func wait(for condition: (State) -> Bool, limit: Duration) async -> Bool {
        let start = ContinuousClock.now
        while ContinuousClock.now - start < limit {
            if state.withLock({ condition($0) }) { return true }
            try? await Task.sleep(for: .milliseconds(5))
        }
        return false
    }

    static func seconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }
}

/// The device that writes: one season per write, synced at once.
final class LiveWriter: Sendable {
    let client: SyncClient
    private let counter = Mutex(0)

    init(url: URL, replica: UInt64 = 0xFFFF) throws {
        client = SyncClient(store: try Store(.memory, schema: LeagueSchema.schema, replica: ReplicaID(replica)), transport: HTTPTransport(url: url))
    }

    /// Writes one season and syncs; the revision it reached and when `sync()` returned.
    func writeOne() async throws -> (Int64, ContinuousClock.Instant) {
        let serial = counter.withLock { value -> Int in
            value += 1
            return value
        }
        try await client.write { store in
            _ = try store.insert("seasons", values: [.text("live \(serial)"), .integer(2026), .textSet(TextSet(["bench"]))])
        }
        _ = try await client.sync()
        let returned = ContinuousClock.now
        return (await client.withStore { $0.maxRevision }, returned)
    }

    /// Writes `count` seasons in one write (names of 100 characters, so that 1,000 of them
    /// are more than 256 KiB of JSON) and syncs; the revision it reached and when `sync()`
    /// was called (the writer's own apply of its answer, 1,000 records, runs on the same
    /// cores as the devices, so that devices often have the page before it returns).
    func write(records count: Int) async throws -> (Int64, ContinuousClock.Instant) {
        let serial = counter.withLock { value -> Int in
            value += 1
            return value
        }
        try await client.write { store in
            for index in 0..<count {
                let name = "large \(serial).\(index) "
                _ = try store.insert(
                    "seasons",
                    values: [.text(name + String(repeating: "x", count: max(0, 100 - name.count))), .integer(2026), .textSet(TextSet(["bench"]))])
            }
        }
        let called = ContinuousClock.now
        _ = try await client.sync()
        return (await client.withStore { $0.maxRevision }, called)
    }
}
