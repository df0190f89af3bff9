import FieldMerge
@testable import FieldMergeSimulation
import Testing

/// `simulate --live` (Specs/simulation.md §8): devices that never sync explicitly during the
/// rounds converge by live mode alone, through dropped connections and a server restart.
@Suite struct LiveSimulationTests {
    static func live(seed: UInt64, faults: FaultRates = .standard) -> SimulationOptions {
        var options = SimulationTests.small(seed: seed, faults: faults)
        options.live = true
        return options
    }

    @Test(arguments: [1, 2] as [UInt64])
    func withFaults_liveModeAloneConverges(_ seed: UInt64) async throws {
        // The standard faults, and connections dropped often enough that every run has some.
        var faults = FaultRates.standard
        faults.dropConnection = 0.2
        let report = try await Simulation(options: Self.live(seed: seed, faults: faults)).run()
        #expect(report.passed, "\(report.rendered())")
        let live = try #require(report.live)
        #expect(live.convergedAfter != nil)
        // Changes came over the channel, and syncs ran though the simulation called none.
        #expect(live.pagesApplied > 0 && live.recordsApplied > 0)
        #expect(live.syncs > 0)
        // Connections were refused and dropped, the server restarted, and all came through.
        #expect(report.faultsInjected[.droppedConnection, default: 0] > 0)
        #expect(live.failedConnections > 0)
        #expect(report.faultsInjected[.serverRestart] == 1 && report.faultsSurvived[.serverRestart] == 1)
        for (kind, count) in report.faultsInjected where kind != .skewedClock {
            #expect(report.faultsSurvived[kind] == count, "\(kind)")
        }
    }

    @Test func devicesThatNeverHearAnything_areReportedAsNotConverged() async throws {
        // Every live connection refused: devices send their own writes but hear nothing.
        var faults = FaultRates()
        faults.dropConnection = 1
        var options = Self.live(seed: 3, faults: faults)
        options.liveDeadline = .seconds(2)
        let report = try await Simulation(options: options).run()
        #expect(!report.passed)
        #expect(report.live?.convergedAfter == nil)
        #expect(report.live?.connections == 0)
        #expect(report.unsettled.contains { $0.hasPrefix("live mode") })
    }

    @Test func theRateSpecNamesDisconnects() throws {
        #expect(try FaultRates(spec: "disconnect=0.2").dropConnection == 0.2)
        #expect(FaultRates.standard.dropConnection > 0)
    }
}
