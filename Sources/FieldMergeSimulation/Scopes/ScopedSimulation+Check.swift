import FieldMerge
import FieldMergeSQLite

extension ScopedSimulation {
    /// After settling: each device lists what it could not send (changes kept aside because
    /// their records left its scope, `outOfScope`, and changes the server refused), notes the
    /// marks in them for the oracle, and gives them up (`Store.discard`) as an app would once
    /// its user saw them; then the devices settle again. A change kept aside must be listed
    /// the same way by `unsyncedChanges()` and `keptAside()`, and a record that had been
    /// synced and is kept aside is gone from the device only if the server told it to leave
    /// or deleted it (else it went back to the server's version, Specs/store.md "Leaving a
    /// scope").
    func giveUp() async throws {
        var gaveUp = 0
        let leaves = await watch.leaves
        let server = try await serverState()
        for device in devices where stuck[device.index] == nil {
            let entries = try await device.client.withStore { store in
                let unsynced = try store.unsyncedChanges().filter { $0.refusal != nil }
                let aside = try store.keptAside()
                let kept = try aside.map { entry in
                    Aside(entity: entry.entity, id: entry.id, code: KeptAside.code, synced: entry.revision != nil,
                          held: try store.record(entry.entity, id: entry.id) != nil)
                }
                var marks: Set<String> = []
                for entry in aside where entry.entity == "tasks" { marks.formUnion(TeamLog.marks(in: entry.record.values)) }
                for change in unsynced where change.entity == "tasks" && change.refusal?.code != KeptAside.code {
                    if let record = try store.record("tasks", id: change.id) { marks.formUnion(TeamLog.marks(in: record.values)) }
                }
                var discarded: Set<[String]> = []
                for change in unsynced where discarded.insert([change.entity, String(change.id)]).inserted {
                    try store.discard(change.entity, id: change.id)
                }
                let listed = unsynced.map { Aside(entity: $0.entity, id: $0.id, code: $0.refusal!.code) }
                return (marks, listed, kept)
            }
            let (marks, listed, aside) = entries  // aside: what keptAside() lists
            givenUp[device.index, default: []].formUnion(marks)
            gaveUp += listed.count
            let name = "device \(device.index) (\(user(of: device)))"
            let listedAside = Set(listed.filter { $0.code == KeptAside.code }.map(\.key)), keptAside = Set(aside.map(\.key))
            if listedAside != keptAside {
                violations.add("aside: \(name) lists \(listedAside.sorted()) as outOfScope but keeps \(keptAside.sorted()) aside")
            }
            for entry in aside where entry.synced && !entry.held && leaves[device.index]?.contains(entry.key) != true
                && server.rows[entry.entity]?[entry.id] != nil
            {
                violations.add("aside: \(name) kept \(entry.key) aside and removed it, but the server never told it to leave it")
            }
            for entry in listed where entry.code != KeptAside.code && entry.code != "unauthorized" {
                report.unsettled.append("\(name): \(entry.key) refused as \(entry.code)")
            }
            report.keptAside += aside.count
            report.refusedKept += listed.filter { $0.code == "unauthorized" }.count
        }
        if gaveUp > 0 { try await settle() }
    }

    /// A change a device could not send, as the check needs it.
    struct Aside: Sendable {
        var entity: String
        var id: Int64
        var code: String
        /// Whether the record had been synced (it has an acknowledged version), and whether
        /// the device still holds it (its server version: the change moved it under a record
        /// that left, Specs/store.md "Leaving a scope").
        var synced = false, held = false
        var key: String { "\(entity)#\(id)" }
    }

    /// Runs the oracle on the server's records and every device's, and fills in the report.
    func check() async throws {
        let server = try await serverState()
        if let tamper { tamper(&log, server) }
        var oracle = ScopeOracle(server: server, log: log, givenUp: givenUp, leftOut: Set(stuck.keys))
        var ends: [ScopeOracle.DeviceEnd] = []
        for device in devices where stuck[device.index] == nil {
            let state = try await device.client.withStore { try TeamState($0.database) }
            let user = user(of: device)
            let end = ScopeOracle.DeviceEnd(
                index: device.index, user: user, roles: directory.roles(of: user), state: state,
                taskIDs: try await device.idMap()["tasks"] ?? [:])
            if oracle.checkHoldings(end), abs(device.skew) > 3_600_000 { ledger.survived(.skewedClock) }
            ends.append(end)
        }
        oracle.checkMarks(ends)
        var all = violations
        all.add(await watch.violations)
        all.add(oracle.violations)
        (report.violations, report.violationCount) = (all.first, all.count)
        report.finalRecords = server.rows.values.reduce(0) { $0 + $1.count }
        (report.marksConfirmed, report.marksGivenUp, report.marksGone) = (oracle.marks.confirmed, oracle.marks.givenUp, oracle.marks.gone)
        (report.joins, report.leaves, report.moves) = (log.joins, log.leaves, log.moves)
        let counts = await watch.counts
        (report.responses, report.recordsInspected, report.unjudged) = (counts.responses, counts.records, counts.unjudged)
        (report.leavesReceived, report.refusals) = (counts.leaves, counts.refusals)
        for device in devices {
            report.syncs += device.syncs
            report.failedAttempts += device.failedAttempts
        }
        let faults = ledger.counts
        (report.faultsInjected, report.faultsSurvived) = (faults.injected, faults.survived)
    }
}
