import Benchmark

/// What every FieldMerge benchmark shares: the sizes, the names, the metrics and their
/// tolerances for `swift package benchmark thresholds check`.
public enum Suite {
    /// The record counts each step runs at.
    public static let sizes = [10_000, 100_000]

    /// `merge.10k`, `codec.decode.100k`: no spaces or `/`, or `thresholds check` can't find
    /// the files `thresholds update` wrote.
    public static func name(_ step: String, records: Int) -> String { "\(step).\(records / 1_000)k" }

    /// Wall clock and malloc counts; a few iterations after one warm-up (100,000 records
    /// take up to seconds per iteration).
    public static func configuration(records: Int) -> Benchmark.Configuration {
        let large = records >= 100_000
        return .init(
            metrics: [.wallClock, .mallocCountTotal],
            warmupIterations: 1,
            maxDuration: .seconds(large ? 5 : 2),
            maxIterations: large ? 5 : 20,
            thresholds: tolerances
        )
    }

    /// How far a run's p90 may drift from the committed one (Thresholds/*.json) before
    /// `thresholds check` reports it. Malloc counts are deterministic here, so they are held
    /// to 2%; wall time only flags a doubling, since this 2-core machine is shared and noisy.
    /// A metric left out would be checked strictly (0%).
    public static var tolerances: [BenchmarkMetric: BenchmarkThresholds] {
        [
            .mallocCountTotal: .init(relative: [.p90: 2.0]),
            .wallClock: .init(relative: [.p90: 100.0]),
        ]
    }
}
