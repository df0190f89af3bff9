import FieldMerge
import FieldMergeSimulation
import Testing

/// A device that sleeps past the compaction horizon while the others delete and edit
/// (Specs/simulation.md, "A device that sleeps past the horizon"): it wakes, is answered
/// `resetRequired`, rebases, and every replica ends equal to the server with nothing lost.
@Suite struct SleeperSimulationTests {
    @Test(arguments: [UInt64(1), 2, 3])
    func theSleeperRebasesAndEveryReplicaConverges(seed: UInt64) async throws {
        var options = SimulationOptions()
        (options.devices, options.records, options.rounds, options.seed) = (5, 2_000, 5, seed)
        options.sleeper = true
        let report = try await Simulation(options: options).run()
        #expect(report.passed, "\(report.rendered())")
        let compaction = try #require(report.compaction)
        #expect(compaction.removed.tombstones > 0 && compaction.horizon > 0)
        // It slept through deletes that were compacted: it had to download again, and did.
        let rebase = try #require(report.sleeperRebase)
        #expect(rebase.began && rebase.finished && rebase.unsyncedKept > 0)
    }
}
