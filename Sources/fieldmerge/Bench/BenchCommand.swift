import ArgumentParser

struct BenchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "bench",
        abstract: "Measures FieldMerge on the benchmark workload (Specs/benchmarks.md); prints one JSON line per step.",
        discussion: "Without a sub-command, runs every bench, each in its own process, and adds its peak RSS.",
        subcommands: [AllBench.self, MergeBench.self, StoreBench.self, CodecBench.self, SyncBench.self, ScopeBench.self, CommitBench.self, AttachmentBench.self, ServeBenchForwarding.self, LiveBenchForwarding.self],
        defaultSubcommand: AllBench.self
    )
}

/// Options every bench shares: the workload's parameters.
struct WorkloadOptions: ParsableArguments {
    @Option(help: "Number of records (N).")
    var records: Int = 100_000
    @Option(help: "Fraction of records each replica edits (p).")
    var editFraction: Double = 0.1
    @Option(help: "Fields per edited record (f, 1-8).")
    var fieldsPerEdit: Int = 2
    @Option(help: "Seed of the workload generator (s).")
    var seed: UInt64 = 42
    @Option(help: "Timed runs per step; the median is reported.")
    var runs: Int = 5

    func validate() throws {
        guard records > 0 else { throw ValidationError("--records must be positive") }
        guard (0...1).contains(editFraction) else { throw ValidationError("--edit-fraction must be within 0...1") }
        guard (1...8).contains(fieldsPerEdit) else { throw ValidationError("--fields-per-edit must be within 1...8") }
        guard runs > 0 else { throw ValidationError("--runs must be positive") }
    }
}
