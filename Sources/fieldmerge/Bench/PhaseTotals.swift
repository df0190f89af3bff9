import FieldMergeToolSupport
import FieldMergeProtocol
import Synchronization

/// A ``SyncProbe`` that adds up the time of each phase until ``take()`` hands the totals over
/// and starts again: one probe for a client, its transport and its server, read after each sync.
final class PhaseTotals: SyncProbe {
    private let totals = Mutex<[SyncPhase: Duration]>([:])

    func record(_ phase: SyncPhase, _ duration: Duration) {
        totals.withLock { $0[phase, default: .zero] += duration }
    }

    /// The seconds of each phase since the last call, a parent's without its children's
    /// (so that the phases add up), and empty the totals.
    func take() -> [SyncPhase: Double] {
        let taken = totals.withLock { totals in
            defer { totals = [:] }
            return totals
        }
        var exclusive = taken
        for (phase, duration) in taken {
            if let parent = phase.parent { exclusive[parent, default: .zero] -= duration }
        }
        return exclusive.mapValues { Double($0.components.seconds) + Double($0.components.attoseconds) / 1e18 }
    }

    /// The median over runs of each phase (a phase missing from a run counts 0 there), and
    /// `other`: the median of what each run's `seconds` left unaccounted for, in
    /// milliseconds, in the order of ``SyncPhase``.
    static func medians(_ runs: [[SyncPhase: Double]], seconds: [Double]) -> [(String, Double)] {
        var result: [(String, Double)] = SyncPhase.allCases.compactMap { phase in
            guard runs.contains(where: { $0[phase] != nil }) else { return nil }
            return (phase.rawValue, median(runs.map { ($0[phase] ?? 0) * 1_000 }))
        }
        let other = zip(runs, seconds).map { run, total in (total - run.values.reduce(0, +)) * 1_000 }
        result.append(("other", median(other)))
        return result
    }
}
