import ArgumentParser
import FieldMerge
import FieldMergeProtocol
import FieldMergeServerPostgres
import FieldMergeSimulation
import FieldMergeSyncHTTP
import FieldMergeToolSupport
import Foundation
import Synchronization

/// Large uploads against `fieldmerge serve` over HTTP on loopback: one request carrying
/// `--records` creates in one change set, then one carrying as many one-record change sets,
/// while another client sends a one-record create every 20 ms and a third catches up every
/// 20 ms from the revision of the last small write. Reports how long each upload took and how
/// long the small writes and catch-ups waited meanwhile (what a large upload costs everyone
/// else), for the server on SQLite and on PostgreSQL.
struct UploadBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "upload",
        abstract: "Large uploads over HTTP (one change set of N creates; N one-record change sets) and the small writes beside them."
    )

    @Option(help: "Records per upload.") var records = 10_000
    @Option(help: "PostgreSQL URL for the postgres setup (default: $FIELDMERGE_POSTGRES_URL).") var postgres: String?
    @Option(help: "Setups, comma separated: sqlite, postgres, postgres-parallel, postgres2, postgres2-parallel (two processes on one data set, the small writes and catch-ups through the second; -parallel: --postgres-order parallel) (default: all that can run).")
    var setups: String?

    func validate() throws {
        guard records >= 1, records <= 100_000 else { throw ValidationError("--records: 1...100000") }
    }

    func run() async throws {
        try await BenchSetups(setups, postgres: postgres, known: ["sqlite", "postgres", "postgres-parallel", "postgres2", "postgres2-parallel"]).run(measure)
    }

    private func measure(_ setup: String, postgres: String?) async throws -> BenchLine {
        let folder = NSTemporaryDirectory() + "fieldmerge-upload-bench-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let dataSet = "fm_bench_\(UInt32.random(in: 0...UInt32.max))"
        let order = ["--postgres-order", setup.hasSuffix("-parallel") ? "parallel" : "locked"]
        let server = try ServeProcess.start(
            setup == "sqlite" ? ["--db", folder + "/server.sqlite"] : ["--postgres", postgres!, "--postgres-schema", dataSet] + order)
        defer { server.stop() }
        // With two processes, the small writes and catch-ups go through the second.
        let beside = setup.hasPrefix("postgres2") ? try ServeProcess.start(["--postgres", postgres!, "--postgres-schema", dataSet] + order) : server
        defer { beside.stop() }
        var configuration = HTTPTransport.Configuration()
        configuration.requestTimeout = 600
        let transport = HTTPTransport(url: server.url, configuration: configuration)
        let schema = LeagueSchema.schema
        let codec = WireCodec(schema: schema)

        // The small writer runs from before the first upload until after the second.
        let stop = StopFlag()
        let small = Task { try await Self.smallWrites(url: beside.url, until: stop) }
        let reads = Task { try await Self.smallReads(url: beside.url, until: stop) }
        try await Task.sleep(for: .milliseconds(200))
        let records = records
        let oneChangeSet = [ChangeSet(entities: [EntityChanges(
            entity: "seasons", create: (1...Int64(records)).map { -$0 },
            records: (1...records).map { Self.season(-Int64($0), name: "one \($0)") })])]
        let oneChangeSetSeconds = try await Self.upload(oneChangeSet, codec: codec, transport: transport, client: "bulk1")
        let changeSets = (1...records).map { ChangeSet(entities: [EntityChanges(entity: "seasons", create: [-1], records: [Self.season(-1, name: "many \($0)")])]) }
        let changeSetsSeconds = try await Self.upload(changeSets, codec: codec, transport: transport, client: "bulk2")
        try await Task.sleep(for: .milliseconds(200))
        stop.raised.store(true, ordering: .relaxed)
        let latencies = try await small.value.sorted()
        let (readLatencies, largeReads) = try await reads.value
        server.stop()
        beside.stop()
        if setup != "sqlite", let postgres {
            let connector = PostgresConnector(try PostgresURL(postgres))
            try? await connector.removeDataSet(named: dataSet)
            await connector.shutdown()
        }
        func percentile(_ p: Double, of latencies: [Double]) -> Double {
            latencies.isEmpty ? .nan : latencies[min(latencies.count - 1, Int((Double(latencies.count) * p).rounded(.up)) - 1)] * 1_000
        }
        var line = BenchLine(
            step: "upload", records: records, seconds: oneChangeSetSeconds + changeSetsSeconds, runs: 1, ops: 2 * records, opUnit: "record")
        line.add("one_change_set_s", oneChangeSetSeconds)
        line.add("change_sets_s", changeSetsSeconds)
        line.add("small_writes", latencies.count)
        line.add("small_p50_ms", percentile(0.5, of: latencies))
        line.add("small_p99_ms", percentile(0.99, of: latencies))
        line.add("small_max_ms", latencies.last.map { $0 * 1_000 } ?? .nan)
        line.add("reads", readLatencies.count)
        line.add("reads_large", largeReads)
        line.add("read_p50_ms", percentile(0.5, of: readLatencies))
        line.add("read_p99_ms", percentile(0.99, of: readLatencies))
        line.add("read_max_ms", readLatencies.last.map { $0 * 1_000 } ?? .nan)
        return line
    }

    static func season(_ id: Int64, name: String) -> WireRecord {
        let seasons = LeagueSchema.schema.entity("seasons")!
        let stamp = Stamp(milliseconds: UInt64(Date().timeIntervalSince1970 * 1_000), replica: ReplicaID(0xB0_00))
        return WireRecord(Record(seasons, id: id, values: [.text(name), .integer(2026), .textSet(TextSet(["bench"]))], stamp: stamp))
    }

    /// Sends `changeSets` in one gzip'd request; the seconds until the answer, which must
    /// commit every change set.
    static func upload(_ changeSets: [ChangeSet], codec: WireCodec, transport: HTTPTransport, client: String) async throws -> Double {
        let schema = LeagueSchema.schema
        let request = SyncRequest(
            maxRevision: 0, changeSets: changeSets, clientID: client, requestID: "1", limit: 1, protocolVersion: WireProtocol.version,
            schemaVersion: schema.version, schemaFingerprint: schema.fingerprint)
        let body = Gzip.compress(codec.encode(request))
        let start = ContinuousClock.now
        let answer = try await transport.send(body, gzip: true)
        let elapsed = ContinuousClock.now - start
        let response = try codec.decodeResponse(try Gzip.decompressIfGzip(answer, limit: WireLimits().maxDecompressedBytes))
        let answered = response.changeSets.suffix(changeSets.count)
        guard answered.count == changeSets.count, answered.allSatisfy({ $0.conflict != true }) else {
            throw ValidationError("the upload of \(changeSets.count) change sets was not taken whole")
        }
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }

    /// One create every 20 ms until `stop`; each request's latency, in seconds.
    static func smallWrites(url: URL, until stop: StopFlag) async throws -> [Double] {
        let schema = LeagueSchema.schema
        let codec = WireCodec(schema: schema)
        let transport = HTTPTransport(url: url)
        var latencies: [Double] = []
        var serial = 0
        while !stop.raised.load(ordering: .relaxed) {
            serial += 1
            let request = SyncRequest(
                maxRevision: 0, changeSets: [ChangeSet(entities: [EntityChanges(entity: "seasons", create: [-1], records: [season(-1, name: "small \(serial)")])])],
                clientID: "small", requestID: "\(serial)", limit: 1, protocolVersion: WireProtocol.version,
                schemaVersion: schema.version, schemaFingerprint: schema.fingerprint)
            let body = Gzip.compress(codec.encode(request))
            let start = ContinuousClock.now
            let answer = try codec.decodeResponse(try Gzip.decompressIfGzip(try await transport.send(body, gzip: true), limit: WireLimits().maxDecompressedBytes))
            let elapsed = ContinuousClock.now - start
            latencies.append(Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
            try await Task.sleep(for: .milliseconds(20))
        }
        return latencies
    }

    /// One catch-up every 20 ms until `stop`, of at most 100 records, each from where the one
    /// before left the reader (its answer's `maxRevision`, as a device's cursor: with writes
    /// in parallel, a write's own revision may lie above what readers may read yet), from the
    /// start of the data set (a few small writes before the first upload): each one's latency, in seconds,
    /// sorted, of those that brought at most 100 records; and how many brought more (the single
    /// revision of the upload in one change set, read whole).
    static func smallReads(url: URL, until stop: StopFlag) async throws -> ([Double], Int) {
        let schema = LeagueSchema.schema
        let codec = WireCodec(schema: schema)
        let transport = HTTPTransport(url: url)
        var (latencies, large): ([Double], Int) = ([], 0)
        var cursor: Int64 = 0
        while !stop.raised.load(ordering: .relaxed) {
            let request = SyncRequest(
                maxRevision: cursor, changeSets: [], limit: 100, protocolVersion: WireProtocol.version,
                schemaVersion: schema.version, schemaFingerprint: schema.fingerprint)
            let body = Gzip.compress(codec.encode(request))
            let start = ContinuousClock.now
            let answer = try codec.decodeResponse(try Gzip.decompressIfGzip(try await transport.send(body, gzip: true), limit: WireLimits().maxDecompressedBytes))
            let elapsed = ContinuousClock.now - start
            cursor = answer.maxRevision
            if answer.changeSets.reduce(0, { $0 + $1.entities.reduce(0) { $0 + $1.records.count } }) > 100 {
                large += 1
            } else {
                latencies.append(Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
            }
            try await Task.sleep(for: .milliseconds(20))
        }
        return (latencies.sorted(), large)
    }
}

/// Tells the small writer and reader of ``UploadBench`` to stop.
final class StopFlag: Sendable {
    let raised = Atomic(false)
}
