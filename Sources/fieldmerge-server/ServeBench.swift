import FieldMergeToolSupport
import ArgumentParser
import FieldMerge
import FieldMergeProtocol
import FieldMergeServer
import FieldMergeServerPostgres
import FieldMergeSimulation
import FieldMergeSyncHTTP
import Foundation

/// Load on `fieldmerge serve` over HTTP on loopback: many clients, each sending one small
/// request after another (one created record, and the catch-up of what the others created
/// since its last answer), for a fixed time. Reports requests per second and the p50 and
/// p99 latency, for the server on SQLite, on PostgreSQL, and as two processes sharing one
/// PostgreSQL data set (clients split between them).
struct ServeBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "serve",
        abstract: "HTTP load on serve: requests/s, p50 and p99 for SQLite, PostgreSQL and two processes on one PostgreSQL."
    )

    @Option(help: "Concurrent clients.") var clients = 32
    @Option(help: "Seconds of load per setup.") var seconds = 10.0
    @Option(help: "PostgreSQL URL for the postgres setups (default: $FIELDMERGE_POSTGRES_URL).") var postgres: String?
    @Option(help: "Setups, comma separated: sqlite, postgres, postgres2, postgres-parallel, postgres2-parallel (-parallel: --postgres-order parallel) (default: all that can run).")
    var setups: String?
    @Flag(help: "Run the servers with --metrics (what recording metrics costs; nothing scrapes them).") var metrics = false
    @Option(help: "Percent of requests that update one of 100 hot records instead of creating one (0-100).") var hotPercent = 0
    @Flag(help: "Run the SQLite setup with --durable (every commit waits for the disk's flush).") var durable = false

    func validate() throws {
        guard clients >= 1, clients <= 1_024 else { throw ValidationError("--clients: 1...1024") }
        guard seconds > 0, seconds <= 600 else { throw ValidationError("--seconds: above 0, at most 600") }
        guard (0...100).contains(hotPercent) else { throw ValidationError("--hot-percent: 0...100") }
    }

    func run() async throws {
        try await BenchSetups(setups, postgres: postgres, known: ["sqlite", "postgres", "postgres2", "postgres-parallel", "postgres2-parallel"]).run(measure)
    }

    private func measure(_ setup: String, postgres: String?) async throws -> BenchLine {
        let folder = NSTemporaryDirectory() + "fieldmerge-serve-bench-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let dataSet = "fm_bench_\(UInt32.random(in: 0...UInt32.max))"
        var arguments: [[String]] = []
        switch setup {
        case "sqlite": arguments = [["--db", folder + "/server.sqlite"] + (durable ? ["--durable"] : [])]
        default:
            let order = ["--postgres-order", setup.hasSuffix("-parallel") ? "parallel" : "locked"]
            arguments = Array(repeating: ["--postgres", postgres!, "--postgres-schema", dataSet] + order, count: setup.hasPrefix("postgres2") ? 2 : 1)
        }
        var servers: [ServeProcess] = []
        defer { for server in servers { server.stop() } }
        // One after another: the first creates the data set.
        for extra in arguments { servers.append(try ServeProcess.start(extra + (metrics ? ["--metrics"] : []))) }
        let urls = servers.map(\.url)
        let hot = hotPercent > 0 ? try await Self.createHotRecords(url: urls[0]) : [:]
        let deadline = ContinuousClock.now + .milliseconds(Int(seconds * 1_000))
        let started = ContinuousClock.now
        let hotPercent = hotPercent
        let (latencies, conflicts) = try await withThrowingTaskGroup(of: ([Double], Int).self) { group in
            for client in 0..<clients {
                let url = urls[client % urls.count]
                group.addTask { try await Self.load(client: client, url: url, until: deadline, hot: hot, hotPercent: hotPercent) }
            }
            var all: [Double] = [], conflicts = 0
            for try await (some, refused) in group {
                all += some
                conflicts += refused
            }
            return (all, conflicts)
        }
        let elapsed = Double((ContinuousClock.now - started).components.attoseconds) / 1e18
            + Double((ContinuousClock.now - started).components.seconds)
        for server in servers { server.stop() }
        servers = []
        if setup != "sqlite", let postgres {
            let connector = PostgresConnector(try PostgresURL(postgres))
            try? await connector.removeDataSet(named: dataSet)
            await connector.shutdown()
        }
        let sorted = latencies.sorted()
        func percentile(_ p: Double) -> Double {
            sorted.isEmpty ? .nan : sorted[min(sorted.count - 1, Int((Double(sorted.count) * p).rounded(.up)) - 1)] * 1_000
        }
        var line = BenchLine(step: "serve", records: sorted.count, seconds: elapsed, runs: 1, ops: sorted.count, opUnit: "request")
        line.add("clients", clients)
        line.add("processes", urls.count)
        line.add("metrics", metrics)
        if hotPercent > 0 {
            line.add("hot_percent", hotPercent)
            line.add("conflicts", conflicts)
        }
        line.add("p50_ms", percentile(0.5))
        line.add("p99_ms", percentile(0.99))
        return line
    }

    /// The 100 hot records (seasons) the `--hot-percent` requests update: their ids and the
    /// revisions they were created at.
    private static func createHotRecords(url: URL) async throws -> [Int64: Int64] {
        let schema = LeagueSchema.schema
        let codec = WireCodec(schema: schema)
        guard let seasons = schema.entity("seasons") else { throw ValidationError("the league schema has no seasons") }
        let stamp = Stamp(milliseconds: UInt64(Date().timeIntervalSince1970 * 1_000), replica: ReplicaID(0xBE_FF))
        let ids = (1...Int64(100)).map { -$0 }
        let records = ids.map { WireRecord(Record(seasons, id: $0, values: [.text("hot \(-$0)"), .integer(2026), .textSet(TextSet(["hot"]))], stamp: stamp)) }
        let request = SyncRequest(
            maxRevision: 0, changeSets: [ChangeSet(entities: [EntityChanges(entity: "seasons", create: ids, records: records)])],
            clientID: "hot", requestID: "1", limit: 1, protocolVersion: WireProtocol.version,
            schemaVersion: schema.version, schemaFingerprint: schema.fingerprint)
        let answer = try await HTTPTransport(url: url).send(Gzip.compress(codec.encode(request)), gzip: true)
        let response = try codec.decodeResponse(try Gzip.decompressIfGzip(answer, limit: WireLimits().maxDecompressedBytes))
        guard let created = response.changeSets.last, created.conflict != true else { throw ValidationError("the hot records were not created") }
        var hot: [Int64: Int64] = [:]
        for record in created.entities.flatMap(\.records) { hot[record.id] = record.revision ?? 0 }
        return hot
    }

    /// One client: requests back to back until `deadline`, each creating one season, or
    /// (`hotPercent` of them) updating one of the `hot` seasons on the revision this client
    /// last saw of it (a stale one is answered as a conflict, with the revision to use).
    /// - Returns: Each request's latency, in seconds, and how many came back as conflicts.
    private static func load(
        client: Int, url: URL, until deadline: ContinuousClock.Instant, hot: [Int64: Int64], hotPercent: Int
    ) async throws -> ([Double], Int) {
        let schema = LeagueSchema.schema
        let codec = WireCodec(schema: schema)
        guard let seasons = schema.entity("seasons") else { throw ValidationError("the league schema has no seasons") }
        let transport = HTTPTransport(url: url)
        var latencies: [Double] = []
        var revision: Int64 = 0
        var serial = 0
        var known = hot
        let hotIDs = hot.keys.sorted()
        var conflicts = 0
        while ContinuousClock.now < deadline {
            serial += 1
            let stamp = Stamp(milliseconds: UInt64(Date().timeIntervalSince1970 * 1_000), replica: ReplicaID(UInt64(0xBE00 + client)))
            let changes: EntityChanges
            if !hotIDs.isEmpty, Int.random(in: 0..<100) < hotPercent, let id = hotIDs.randomElement() {
                let record = WireRecord(id: id, present: FieldMask([0]), values: [.text("c\(client)u\(serial)"), .null, .null], stamps: [stamp, .none, .none], revision: known[id])
                changes = EntityChanges(entity: "seasons", update: [id], records: [record])
            } else {
                let record = Record(seasons, id: -1, values: [.text("c\(client)s\(serial)"), .integer(2026), .textSet(TextSet(["bench"]))], stamp: stamp)
                changes = EntityChanges(entity: "seasons", create: [-1], records: [WireRecord(record)])
            }
            let request = SyncRequest(
                maxRevision: revision, changeSets: [ChangeSet(entities: [changes])],
                clientID: "bench\(client)", requestID: "\(serial)", protocolVersion: WireProtocol.version,
                schemaVersion: schema.version, schemaFingerprint: schema.fingerprint)
            let body = Gzip.compress(codec.encode(request))
            let start = ContinuousClock.now
            let answer = try await transport.send(body, gzip: true)
            let response = try codec.decodeResponse(try Gzip.decompressIfGzip(answer, limit: WireLimits().maxDecompressedBytes))
            let elapsed = ContinuousClock.now - start
            latencies.append(Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
            revision = response.maxRevision
            if response.changeSets.last?.conflict == true { conflicts += 1 }
            // What it learnt of the hot records: the catch-up, and a conflict's truth.
            for changeSet in response.changeSets {
                for entity in changeSet.entities where entity.entity == "seasons" {
                    for record in entity.records where known[record.id] != nil {
                        if let at = record.revision { known[record.id] = at }
                    }
                }
            }
        }
        return (latencies, conflicts)
    }
}
