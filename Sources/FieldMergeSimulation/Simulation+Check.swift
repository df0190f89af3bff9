import FieldMerge
import FieldMergeSQLite
import FieldMergeSync
import FieldMergeProtocol
import Foundation

extension Simulation {
    /// Two devices join late: one opens the seed's snapshot and catches up, the other
    /// downloads everything. Both take part in the final comparison.
    func bootstrap() async throws {
        let fromSnapshot = path("late-snapshot.sqlite")
        var start = ContinuousClock.now
        var before = await endpoint.metrics
        try FileManager.default.copyItem(atPath: path("seed.snapshot"), toPath: fromSnapshot)
        let snapshotStore = try Store.openSnapshot(at: fromSnapshot, schema: schema, replica: ReplicaID(0x1A7E_0001), wall: serverWall)
        let snapshotClient = SyncClient(store: snapshotStore, transport: endpoint, batchSize: Self.pageSize)
        let caughtUp = try await snapshotClient.sync()
        var wire = await endpoint.metrics - before
        report.snapshotBootstrap = BootstrapCost(
            seconds: seconds(since: start), requests: wire.requests, bytesOnWire: wire.gzipBytesUp + wire.gzipBytesDown,
            recordsReceived: caughtUp.received)
        late.append(("late joiner (snapshot)", snapshotClient))

        start = ContinuousClock.now
        before = await endpoint.metrics
        let fresh = try Store(.file(path: path("late-download.sqlite")), schema: schema, replica: ReplicaID(0x1A7E_0002), wall: serverWall)
        let freshClient = SyncClient(store: fresh, transport: endpoint, batchSize: Self.pageSize)
        let downloaded = try await freshClient.sync()
        wire = await endpoint.metrics - before
        report.downloadBootstrap = BootstrapCost(
            seconds: seconds(since: start), requests: wire.requests, bytesOnWire: wire.gzipBytesUp + wire.gzipBytesDown,
            recordsReceived: downloaded.received)
        late.append(("late joiner (download)", freshClient))
    }

    /// Compares every replica's digest with the server's (or, with a remote server, with the
    /// device that downloaded everything), runs the oracle, and fills in the report.
    func check() async throws {
        let schema = self.schema
        if let sabotage, let last = devices.last { try await last.client.withStore { try sabotage($0) } }
        var reference = try await endpoint.withServer { try await $0.withSQLite { try DataDigest($0, schema: schema) } } ?? nil
        var referenceName = "the server"
        if reference == nil, let (name, client) = late.last {
            reference = try await client.withStore { try DataDigest($0.database, schema: schema) }
            referenceName = name
        }
        if reference == nil {
            reference = try await devices[0].client.withStore { try DataDigest($0.database, schema: schema) }
            referenceName = "device 0"
        }
        let expected = reference!
        report.finalRecords = expected.rows
        report.digest = expected.combined
        var replicas = devices.map { (name: "device \($0.index)", client: $0.client) }
        replicas += late
        for (index, replica) in replicas.enumerated() {
            let digest = try await replica.client.withStore { try DataDigest($0.database, schema: schema) }
            if digest != expected {
                report.divergences.append("\(replica.name) differs from \(referenceName) in " + digest.differences(from: expected).joined(separator: ", "))
            } else if index < devices.count, devices[index].skew > 3_600_000 || devices[index].skew < -3_600_000 {
                ledger.survived(.skewedClock)
            }
            progress?("check", index + 1, replicas.count + 1)
        }
        var idMaps: [[String: [Int64: Int64]]] = []
        for device in devices { idMaps.append(try await device.idMap()) }
        if let tamper { tamper(&oracle) }
        if let tamperParked { tamperParked(&parked) }
        let (oracle, parked) = (self.oracle, self.parked)
        var refuses: (@Sendable (Int, String, Int64) -> Bool)?
        if options.refusals, await endpoint.isLocal { refuses = RefusalRule.refuses(device:entity:id:) }
        report.oracle = try await devices[0].client.withStore { try oracle.check($0, idMaps: idMaps, refuses: refuses, parked: parked) }
        progress?("check", replicas.count + 1, replicas.count + 1)
        report.wire = await endpoint.metrics
        summarize()
    }

    /// Copies the counters into the report.
    func summarize() {
        for edit in oracle.edits {
            let kind = switch edit.kind {
            case .create: "create"
            case .set: "set"
            case .increment: "increment"
            case .add: "add"
            case .raise: "raise"
            case .delete: "delete"
            }
            report.edits[kind, default: 0] += 1
            if edit.plainSQL { report.plainSQLEdits += 1 }
        }
        for device in devices {
            report.syncs += device.syncs
            report.failedAttempts += device.failedAttempts
            report.conflictingChangeSets += device.summary.conflictingChangeSets
            report.mergedRecords += device.summary.merged
            for conflict in device.summary.conflicts { report.conflicts[conflict.kind, default: 0] += 1 }
        }
        let counts = ledger.counts
        report.faultsInjected = counts.injected
        report.faultsSurvived = counts.survived
    }
}
