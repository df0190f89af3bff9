import FieldMergeSimulation
import Testing

/// The snippet of `Simulation`'s `///` comment, between `// Simulation.swift block begin` and
/// `… end` (`DocSnippets.docComments`, in FieldMergeServerHTTPTests, checks that it is the
/// comment's code, line for line).
@Suite struct DocCommentSimulationTests {
    @Test func simulationSnippet_convergesWithNothingLost() async throws {
        // Simulation.swift block begin
        var options = SimulationOptions()
        (options.devices, options.records, options.rounds) = (5, 1_000, 3)   // a small run
        let report = try await Simulation(options: options).run()
        print(report.rendered())   // report.passed says whether it converged with nothing lost
        // Simulation.swift block end
        #expect(report.passed)
        #expect(report.divergences.isEmpty)
    }
}
