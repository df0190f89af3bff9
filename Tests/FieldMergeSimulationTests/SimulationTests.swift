import FieldMerge
import FieldMergeSQLite
@testable import FieldMergeSimulation
import Testing

/// Small simulations: every fault on, several seeds; and proof that the checks catch a loss
/// and a divergence when there is one.
@Suite struct SimulationTests {
    static func small(seed: UInt64, faults: FaultRates = .standard) -> SimulationOptions {
        var options = SimulationOptions()
        (options.devices, options.records, options.rounds, options.seed) = (5, 2_000, 6, seed)
        options.faults = faults
        return options
    }

    @Test(arguments: [1, 2, 3] as [UInt64])
    func allFaultsOn_devicesConvergeAndNothingIsLost(_ seed: UInt64) async throws {
        let report = try await Simulation(options: Self.small(seed: seed)).run()
        #expect(report.divergences.isEmpty)
        #expect(report.unsettled.isEmpty)
        #expect(report.oracle.failures.isEmpty)
        #expect(report.passed, "\(report.rendered())")
        #expect(report.oracle.records >= 2_000 && report.oracle.fields > 0)
        // The faults really happened, and every device came through them.
        #expect(report.faultsInjected.values.reduce(0, +) > 0)
        #expect(report.faultsInjected[.serverRestart] == 1 && report.faultsSurvived[.serverRestart] == 1)
        for (kind, count) in report.faultsInjected where kind != .skewedClock {
            #expect(report.faultsSurvived[kind] == count, "\(kind)")
        }
    }

    @Test func withoutFaults_theLateJoinersMatchAndTheSnapshotIsCheaper() async throws {
        let report = try await Simulation(options: Self.small(seed: 7, faults: .none)).run()
        #expect(report.passed, "\(report.rendered())")
        #expect(report.faultsInjected.isEmpty)
        let snapshot = try #require(report.snapshotBootstrap), download = try #require(report.downloadBootstrap)
        #expect(snapshot.recordsReceived < download.recordsReceived)
        #expect(snapshot.bytesOnWire < download.bytesOnWire)
        #expect(report.edits["create", default: 0] > 0 && report.edits["delete", default: 0] > 0)
        #expect(report.conflictingChangeSets > 0)
    }

    @Test func aLostIncrement_isReportedByTheOracle() async throws {
        // Without cascading deletes, so that the record of the first increment survives.
        var options = Self.small(seed: 4, faults: .none)
        options.cascadingDeletes = false
        let simulation = try Simulation(options: options)
        simulation.tamper = { oracle in
            // Claim one more increment than any device made: the counter now looks short.
            guard let edit = oracle.edits.first(where: { if case .increment = $0.kind { true } else { false } }) else { return }
            var extra = edit
            extra.kind = .increment(1)
            oracle.record([extra])
        }
        let report = try await simulation.run()
        #expect(!report.passed)
        #expect(report.oracle.failureCount == 1)
        #expect(report.oracle.failures.first?.contains("counter") == true)
        #expect(report.divergences.isEmpty)
    }

    @Test func aNewerWriteMissingFromTheData_isReportedAsLost() async throws {
        let simulation = try Simulation(options: Self.small(seed: 6, faults: .none))
        simulation.tamper = { oracle in
            // Claim a write newer than any: the field's final value is now an older one.
            guard var extra = oracle.edits.first(where: { if case .set = $0.kind { true } else { false } }) else { return }
            extra.stamp = Stamp(clock: .max - 1, replica: ReplicaID(0xBAD))
            extra.value = .text("never written")
            oracle.record([extra])
        }
        let report = try await simulation.run()
        #expect(!report.passed)
        #expect(report.oracle.failureCount == 1)
        #expect(report.oracle.failures.first?.contains("was lost to") == true)
    }

    @Test func aRowChangedBehindADevicesBack_isReportedAsDivergence() async throws {
        let simulation = try Simulation(options: Self.small(seed: 5, faults: .none))
        simulation.sabotage = { store in try store.database.run("UPDATE \"teams\" SET \"name\" = 'sabotaged' WHERE \"id\" = 1") }
        let report = try await simulation.run()
        #expect(!report.passed)
        #expect(report.divergences.count == 1)
        #expect(report.divergences.first?.hasPrefix("device 4 differs from the server in teams") == true)
    }

    /// Issue #10's proof: entities with `editWins` and `lastEditWins`, devices that write with
    /// plain SQL through a second connection, and a server that refuses some updates, all
    /// with faults on.
    @Test func deletePoliciesPlainSQLAndRefusals_convergeAndAreAccountedFor() async throws {
        var options = Self.small(seed: 11)
        options.devices = 6  // devices 1 and 5 are refused some venues; 2 and 5 write with SQL
        let report = try await Simulation(options: options).run()
        #expect(report.passed, "\(report.rendered())")
        #expect(report.plainSQLEdits > 0)
        #expect(report.oracle.refusedEdits > 0)
        #expect(report.oracle.keptAside > 0)
        #expect(report.oracle.broughtBack + report.oracle.deletedDespiteEdits > 0)
    }

    @Test func aRefusedEditThatWasNotKeptAside_isReported() async throws {
        var options = Self.small(seed: 11, faults: .none)
        options.devices = 6
        let simulation = try Simulation(options: options)
        var forgotten = 0
        simulation.tamperParked = { parked in
            forgotten = parked.count
            parked = []
        }
        let report = try await simulation.run()
        #expect(forgotten > 0)
        #expect(!report.passed)
        #expect(report.oracle.failures.first?.contains("was neither kept aside nor applied") == true)
        #expect(report.divergences.isEmpty)
    }

    @Test func withoutTheRule_nothingIsRefusedOrKeptAside() async throws {
        var options = Self.small(seed: 11, faults: .none)
        (options.devices, options.refusals, options.plainSQLEvery) = (6, false, 0)
        let report = try await Simulation(options: options).run()
        #expect(report.passed, "\(report.rendered())")
        #expect(report.oracle.refusedEdits == 0 && report.oracle.keptAside == 0 && report.plainSQLEdits == 0)
    }

    /// Issue #11's proof: a third of the way through, the server and half the devices move
    /// to schema version 2 (a renamed field, a new counter and a new text field with
    /// defaults, a changed strategy, a new entity), their files migrating with unsent
    /// changes in them; the other half sync on version 1 for three rounds, answered in
    /// their own schema, then upgrade too. With faults, nothing is lost.
    @Test(arguments: [12, 13] as [UInt64])
    func anUpgradeMidRun_withHalfTheDevicesBehind_convergesAndLosesNothing(_ seed: UInt64) async throws {
        var options = Self.small(seed: seed)
        (options.devices, options.rounds) = (6, 8)
        options.upgrade = true
        let report = try await Simulation(options: options).run()
        #expect(report.passed, "\(report.rendered())")
        #expect(report.upgradeChanges == [
            "add entity sponsors", "rename field venues.city to town", "field teams.bestScore: strategy=highScore becomes strategy=max",
            "add field teams.fans", "add field players.nickname",
        ])
        #expect(report.upgradedDevices == options.devices)
        #expect(report.syncsBehind > 0)
    }

    @Test func faultSpecs_parse() throws {
        #expect(try FaultRates(spec: "") == .standard)
        let one = try FaultRates(spec: "0.2")
        #expect(one.dropRequest == 0.2 && one.crash == 0.2 && one.restart)
        let pairs = try FaultRates(spec: "lose=0.1, crash=0.05")
        #expect(pairs.dropResponse == 0.1 && pairs.crash == 0.05 && pairs.dropRequest == 0 && !pairs.restart)
        #expect(throws: SimulationError.self) { try FaultRates(spec: "melt=1") }
        #expect(throws: SimulationError.self) { try FaultRates(spec: "drop=2") }
    }
}
