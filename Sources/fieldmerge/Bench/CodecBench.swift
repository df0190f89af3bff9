import FieldMergeToolSupport
import ArgumentParser
import FieldMerge
import FieldMergeSync
import FieldMergeProtocol
import FieldMergeWorkload

/// `fieldmerge bench codec`: the wire codec and gzip on one change set carrying all N
/// `reminders` records (Specs/benchmarks.md, "codec").
///
/// The change set is what a client uploads after editing everything, or an initial-sync
/// page: every record in `update` with all 8 fields, its `revision` and `__stamps__`
/// (replica A's state under the reference stamping, so stamps differ per field).
struct CodecBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "codec",
        abstract: "Encodes and decodes a change set of N records (JSON MB/s), gzips and gunzips it."
    )

    @OptionGroup var workload: WorkloadOptions
    @Option(name: .customLong("gzip-level"), help: "gzip level(s) to measure; repeat the option for several.")
    var gzipLevels: [Int32] = [Gzip.defaultLevel]
    @Option(name: .customLong("gzip-engine"), help: "gzip engine(s) to measure (zlib, libdeflate); repeat the option for several.")
    var gzipEngines: [Gzip.Engine] = [Gzip.preferredEngine]
    @Option(help: "Link speed for the sync-time estimate, in MB/s (compress + bytes / speed + gunzip).")
    var linkMBPerSecond: Double = 5

    func validate() throws {
        guard gzipLevels.allSatisfy({ (0...9).contains($0) }) else { throw ValidationError("--gzip-level must be within 0...9") }
        for engine in gzipEngines where !Gzip.engines.contains(engine) {
            throw ValidationError("--gzip-engine \(engine.rawValue): this system does not have it")
        }
        guard linkMBPerSecond > 0 else { throw ValidationError("--link-mb-per-second must be positive") }
    }

    func run() throws {
        let generated = Workload.generate(
            records: workload.records, editFraction: workload.editFraction,
            fieldsPerEdit: workload.fieldsPerEdit, seed: workload.seed)
        let entity = Workload.remindersEntity
        // The bench times the codec, not the server's body limit: at 1,000,000 records the
        // one change set is about 300 MB, past the default 256 MiB a peer may send.
        let codec = WireCodec(schema: try Schema([entity]), limits: WireLimits(maxBytes: 1 << 34, maxDecompressedBytes: 1 << 34))
        let response = Self.changeSet(generated)
        let n = workload.records

        var encodedResult: [UInt8]?
        let encodeSeconds = try Self.medianSeconds(runs: workload.runs, keeping: &encodedResult) { codec.encode(response) }
        let encoded = encodedResult!
        var decoded: SyncResponse?
        let decodeSeconds = try Self.medianSeconds(runs: workload.runs, keeping: &decoded) {
            try codec.decodeResponse(encoded)
        }
        let roundTripOK = decoded == response
        let megabytes = Double(encoded.count) / 1_000_000

        for (step, seconds) in [("codec-encode", encodeSeconds), ("codec-decode", decodeSeconds)] {
            var line = BenchLine(step: step, records: n, seconds: seconds, runs: workload.runs, ops: n, opUnit: "records")
            line.add("bytes", encoded.count)
            line.add("mb_per_s", megabytes / seconds)
            line.add("digest_ok", roundTripOK)
            print(line.render())
        }

        var gzipOK = true
        for (engine, level) in gzipEngines.flatMap({ engine in gzipLevels.map { (engine, $0) } }) {
            var compressedResult: [UInt8]?
            let compressSeconds = try Self.medianSeconds(runs: workload.runs, keeping: &compressedResult) {
                Gzip.compress(encoded, level: level, engine: engine)
            }
            let compressed = compressedResult!
            var inflated: [UInt8]?
            let decompressSeconds = try Self.medianSeconds(runs: workload.runs, keeping: &inflated) {
                try Gzip.decompress(compressed, limit: encoded.count, engine: engine)
            }
            let ok = inflated == encoded
            gzipOK = gzipOK && ok
            let syncSeconds = compressSeconds + Double(compressed.count) / (linkMBPerSecond * 1_000_000) + decompressSeconds

            var gzip = BenchLine(step: "gzip", records: n, seconds: compressSeconds, runs: workload.runs, ops: n, opUnit: "records")
            gzip.add("gzip_engine", engine.rawValue)
            gzip.add("level", Int(level))
            gzip.add("bytes_in", encoded.count)
            gzip.add("bytes_out", compressed.count)
            gzip.add("ratio", Double(encoded.count) / Double(compressed.count))
            gzip.add("mb_per_s", megabytes / compressSeconds)
            gzip.add("sync_seconds_at_\(Self.format(linkMBPerSecond))_mb_per_s", syncSeconds)
            gzip.add("digest_ok", ok)
            print(gzip.render())

            var gunzip = BenchLine(step: "gunzip", records: n, seconds: decompressSeconds, runs: workload.runs, ops: n, opUnit: "records")
            gunzip.add("gzip_engine", engine.rawValue)
            gunzip.add("level", Int(level))
            gunzip.add("bytes_in", compressed.count)
            gunzip.add("bytes_out", inflated?.count ?? 0)
            gunzip.add("mb_per_s", megabytes / decompressSeconds)
            gunzip.add("digest_ok", ok)
            print(gunzip.render())
        }
        if !roundTripOK || !gzipOK { throw ExitCode(1) }
    }

    /// The median time of `runs` runs of `body` after one warm-up, keeping the last result.
    /// The previous result is released before the timer starts: freeing 100,000 decoded
    /// records is not part of decoding the next body (and the heap it leaves is warm, as
    /// in a sync loop that applies one response before reading the next).
    static func medianSeconds<Result>(runs: Int, keeping result: inout Result?, _ body: () throws -> Result) throws -> Double {
        var times: [Double] = []
        for run in 0...max(1, runs) {
            result = nil
            let time = try seconds { result = try body() }
            if run > 0 { times.append(time) }
        }
        return median(times)
    }

    /// One change set updating every record: all fields present, stamped, with a revision.
    static func changeSet(_ generated: Workload) -> SyncResponse {
        let (_, local, _) = generated.referenceBatches()
        let fieldCount = local.fieldCount
        var records: [WireRecord] = []
        records.reserveCapacity(local.count)
        var ids: [Int64] = []
        ids.reserveCapacity(local.count)
        let all = FieldMask.all(count: fieldCount)
        for index in 0..<local.count {
            let record = local.record(at: index, entity: Workload.remindersEntity.name)
            records.append(WireRecord(
                id: record.id, present: all, values: record.values, stamps: record.stamps, revision: 1))
            ids.append(record.id)
        }
        let changes = EntityChanges(entity: Workload.remindersEntity.name, update: ids, records: records)
        return SyncResponse(maxRevision: 2, changeSets: [ChangeSet(entities: [changes], conflict: false)])
    }

    private static func format(_ value: Double) -> String {
        value == value.rounded() ? String(Int(value)) : String(value).split(separator: ".").joined(separator: "_")
    }
}

extension Gzip.Engine: ExpressibleByArgument {}
