#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// One JSON line of `fieldmerge bench` and `fieldmerge-server bench` output (Specs/benchmarks.md).
package struct BenchLine {
    package var engine = "fieldmerge"
    package var step: String
    package var records: Int
    package var seconds: Double
    package var runs: Int
    package var ops: Int
    package var opUnit: String
    package var extra: [(String, String)] = []

    package init(step: String, records: Int, seconds: Double, runs: Int, ops: Int, opUnit: String) {
        self.step = step
        self.records = records
        self.seconds = seconds
        self.runs = runs
        self.ops = ops
        self.opUnit = opUnit
    }

    package mutating func add(_ key: String, _ value: Double) { extra.append((key, format(value))) }
    package mutating func add(_ key: String, _ value: Int) { extra.append((key, String(value))) }
    package mutating func add(_ key: String, _ value: Bool) { extra.append((key, value ? "true" : "false")) }
    package mutating func add(_ key: String, _ value: String) { extra.append((key, "\"\(value)\"")) }
    /// Every run's seconds, as a JSON array, beside the median the line reports.
    package mutating func add(_ key: String, _ values: [Double]) { extra.append((key, "[" + values.map(format).joined(separator: ",") + "]")) }
    /// Named figures, as a JSON object in this order.
    package mutating func add(_ key: String, _ fields: [(String, Double)]) {
        extra.append((key, "{" + fields.map { "\"\($0.0)\":\(format(($0.1 * 1_000).rounded() / 1_000))" }.joined(separator: ",") + "}"))
    }

    package func render() -> String {
        var parts: [(String, String)] = [
            ("engine", "\"\(engine)\""), ("step", "\"\(step)\""), ("records", String(records)),
            ("seconds", format(seconds)), ("runs", String(runs)), ("ops", String(ops)),
            ("op_unit", "\"\(opUnit)\""), ("ops_per_s", String(Int((Double(ops) / seconds).rounded()))),
        ]
        parts += extra
        parts.append(("peak_rss_mb", format(peakResidentMegabytes())))
        // A key twice would be valid-looking JSON that readers take differently.
        precondition(Set(parts.map(\.0)).count == parts.count, "a bench line names a key twice: \(parts.map(\.0))")
        return "{" + parts.map { "\"\($0.0)\":\($0.1)" }.joined(separator: ",") + "}"
    }

    private func format(_ value: Double) -> String {
        guard value.isFinite else { return "null" }
        if value == value.rounded() && abs(value) < 1e15 { return String(Int(value)) }
        let scaled = (value * 1_000_000).rounded() / 1_000_000
        return String(scaled)
    }
}

/// The process's peak resident set size so far, in MiB.
package func peakResidentMegabytes() -> Double {
    let usage = processUsage()
    #if canImport(Darwin)
    return (Double(usage.ru_maxrss) / 1_048_576 * 10).rounded() / 10
    #else
    return (Double(usage.ru_maxrss) / 1024 * 10).rounded() / 10
    #endif
}

/// The time `body` takes, in seconds.
package func seconds(_ body: () throws -> Void) rethrows -> Double {
    let elapsed = try ContinuousClock().measure(body)
    return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
}

/// The median of some times.
package func median(_ times: [Double]) -> Double {
    let sorted = times.sorted()
    return sorted.isEmpty ? .nan : sorted[sorted.count / 2]
}

/// Runs `body` `warmups + runs` times and returns the median time of the timed runs.
package func medianSeconds(runs: Int, warmups: Int = 1, _ body: () throws -> Void) rethrows -> Double {
    for _ in 0..<warmups { try body() }
    var times: [Double] = []
    for _ in 0..<max(1, runs) { times.append(try seconds(body)) }
    return median(times)
}

/// The CPU time this process has used so far (user and system, every thread), in seconds.
package func processCPUSeconds() -> Double {
    let usage = processUsage()
    func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
    return seconds(usage.ru_utime) + seconds(usage.ru_stime)
}

private func processUsage() -> rusage {
    var usage = rusage()
    #if canImport(Darwin)
    getrusage(RUSAGE_SELF, &usage)
    #else
    getrusage(RUSAGE_SELF.rawValue, &usage)
    #endif
    return usage
}
