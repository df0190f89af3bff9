import FieldMergeToolSupport
import ArgumentParser
import Foundation

/// `fieldmerge bench` (or `fieldmerge bench all`): every bench, each in its own process.
///
/// Each bench re-runs this executable as `fieldmerge bench <name> ...`; its JSON lines go
/// straight to stdout (the child shares it), then one `peak-rss` line follows with the
/// child's `rusage.ru_maxrss` from `wait4`, so a bench's memory is not mixed with the
/// workloads of the benches before it.
struct AllBench: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "all",
        abstract: "Runs merge, store, codec and sync, each in a child process, with a peak-RSS line per bench."
    )

    /// The benches, in the order they run.
    static let benches = ["merge", "store", "codec", "sync"]

    @Option(help: "Number of records (N). Default 100,000, or 1,000 with --quick.")
    var records: Int?
    @Option(help: "Timed runs per step; the median is reported. Default 5, or 1 with --quick.")
    var runs: Int?
    @Option(help: "Seed of the workload generator (s).")
    var seed: UInt64 = 42
    @Flag(help: "A smoke run: 1,000 records and 1 run unless given.")
    var quick = false
    @Option(name: .customLong("only"), help: "Run only this bench (merge, store, codec, sync); repeatable.")
    var only: [String] = []

    var recordCount: Int { records ?? (quick ? 1_000 : 100_000) }
    var runCount: Int { runs ?? (quick ? 1 : 5) }

    func validate() throws {
        guard recordCount > 0 else { throw ValidationError("--records must be positive") }
        guard runCount > 0 else { throw ValidationError("--runs must be positive") }
        for name in only where !Self.benches.contains(name) {
            throw ValidationError("unknown bench '\(name)' (known: \(Self.benches.joined(separator: ", ")))")
        }
    }

    func run() throws {
        var failures: [String] = []
        for bench in Self.benches where only.isEmpty || only.contains(bench) {
            let arguments = [
                "bench", bench, "--records", String(recordCount), "--runs", String(runCount), "--seed", String(seed),
            ]
            // The child's figure can't go below the parent's own peak (see `ChildProcess.run`).
            let floor = peakResidentMegabytes()
            let exit = try ChildProcess.run(ChildProcess.currentExecutable, argv0: "fieldmerge", arguments: arguments)
            writeLine(to: FileHandle.standardOutput, peakRSSLine(bench: bench, exit: exit, floorMegabytes: floor))
            if exit.exitCode != 0 {
                failures.append(bench)
                writeLine(to: FileHandle.standardError, "fieldmerge bench: '\(bench)' failed (\(exit.outcome))")
            }
        }
        if !failures.isEmpty {
            writeLine(to: FileHandle.standardError, "fieldmerge bench: failed: \(failures.joined(separator: ", "))")
            throw ExitCode(1)
        }
    }

    /// `{"engine":"fieldmerge","bench":"merge","step":"peak-rss","records":…,"peak_rss_mb":…}`.
    private func peakRSSLine(bench: String, exit: ChildExit, floorMegabytes: Double) -> String {
        func tenths(_ value: Double) -> String { String((value * 10).rounded() / 10) }
        var fields = [
            ("engine", "\"fieldmerge\""), ("bench", "\"\(bench)\""), ("step", "\"peak-rss\""),
            ("records", String(recordCount)), ("runs", String(runCount)),
            ("peak_rss_mb", tenths(Double(exit.maxResidentKilobytes) / 1024)),
            ("rss_floor_mb", tenths(floorMegabytes)),
            ("wall_seconds", String((exit.seconds * 1000).rounded() / 1000)),
        ]
        if let code = exit.exitCode { fields.append(("exit_code", String(code))) }
        if let signal = exit.signal { fields.append(("signal", String(signal))) }
        return "{" + fields.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}"
    }

    /// Unbuffered, so lines stay in order with the children's output on the same stdout.
    private func writeLine(to handle: FileHandle, _ line: String) {
        handle.write(Data((line + "\n").utf8))
    }
}
