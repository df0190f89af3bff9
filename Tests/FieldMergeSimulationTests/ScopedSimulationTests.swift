import FieldMerge
@testable import FieldMergeSimulation
import Testing

/// Small scoped simulations (Specs/simulation.md, "Scopes"): with and without faults, every
/// device ends with exactly its user's records, nothing outside its scope reached it and no
/// acknowledged edit was lost, and the run really exercised what changes who sees what; a
/// server without scopes is caught leaking, and an increment the server never took is
/// caught missing.
@Suite struct ScopedSimulationTests {
    static func small(seed: UInt64, faults: FaultRates = .none) -> ScopedSimulationOptions {
        var options = ScopedSimulationOptions()
        (options.devices, options.projects, options.tasks, options.rounds, options.seed) = (8, 6, 60, 6, seed)
        (options.editsPerDevice, options.faults) = (8, faults)
        return options
    }

    static func expectExercised(_ report: ScopedSimulationReport) {
        #expect(report.joins > 0 && report.leaves > 0 && report.moves > 0, "\(report.rendered())")
        #expect(report.roleChanges == 2)
        #expect(report.leavesReceived > 0 && report.keptAside > 0)
        #expect(report.probes > 0 && report.probesRefused == report.probes && report.refusals >= report.probes)
        #expect(report.marksConfirmed > 0 && report.recordsInspected > 0)
    }

    @Test func withoutFaults_everyDeviceHoldsExactlyItsUsersRecords() async throws {
        let report = try await ScopedSimulation(options: Self.small(seed: 1)).run()
        #expect(report.passed, "\(report.rendered())")
        #expect(report.violationCount == 0 && report.unsettled.isEmpty)
        #expect(report.faultsInjected.isEmpty)
        Self.expectExercised(report)
    }

    /// Every fault, corrupted bodies included (a lost answer whose retry arrived corrupted
    /// made the client forget a request the server took: Specs/simulation.md, "Scopes", bug 6).
    static let faults = FaultRates.standard

    @Test(arguments: [2, 3] as [UInt64])
    func withFaults_nothingLeaksAndNothingAcknowledgedIsLost(_ seed: UInt64) async throws {
        let report = try await ScopedSimulation(options: Self.small(seed: seed, faults: Self.faults)).run()
        #expect(report.passed, "\(report.rendered())")
        #expect(report.violationCount == 0 && report.unsettled.isEmpty)
        Self.expectExercised(report)
        #expect(report.faultsInjected[.serverRestart] == 1 && report.faultsSurvived[.serverRestart] == 1)
        for (kind, count) in report.faultsInjected { #expect(report.faultsSurvived[kind] == count, "\(kind)") }
    }

    @Test func aServerWithoutScopes_isReportedAsLeaking() async throws {
        var options = Self.small(seed: 4)
        options.serverScopes = false
        let report = try await ScopedSimulation(options: options).run()
        #expect(!report.passed)
        #expect(report.violations.contains { $0.hasPrefix("leak: ") })
        #expect(report.violations.contains { $0.hasPrefix("probe: ") && $0.hasSuffix("was not refused as unauthorized") })
        #expect(report.violationCount > report.violations.count)  // more than the first 30
    }

    @Test func aLostIncrement_isReportedByTheOracle() async throws {
        let simulation = try ScopedSimulation(options: Self.small(seed: 5))
        simulation.tamper = { log, server in
            // Claim a raise the server never saw: its mark is nowhere, its task still there.
            guard let task = server.ids("tasks").first else { return }
            log.marks.append(TeamLog.Mark(device: 1, task: task, mark: "never-sent", amount: 1))
        }
        let report = try await simulation.run()
        #expect(report.violationCount == 1, "\(report.rendered())")
        #expect(report.violations.first?.hasPrefix("lost: device ") == true)
    }
}
