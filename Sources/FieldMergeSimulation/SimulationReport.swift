import FieldMerge
import FieldMergeSync
import FieldMergeProtocol
import FieldMergeServer

/// What a simulation may do: sizes, seed, faults, server mode.
public struct SimulationOptions: Sendable {
    public var devices = 50
    public var records = 100_000
    public var rounds = 10
    public var seed: UInt64 = 1
    /// Local edits per device that goes offline in a round.
    public var editsPerDevice = 20
    /// The share of devices that edit in a round, and the share that syncs.
    public var editingShare = 0.8, syncingShare = 0.7
    public var faults = FaultRates.none
    /// The in-process server's mode (ignored with a remote server).
    public var mode = RevisionServer.Mode.strict
    /// Where the temporary folder goes (the system's temporary directory if nil).
    public var parentFolder: String?
    /// Keep the folder with the devices' and the server's files.
    public var keepFolder = false
    /// Devices that join late, one from a snapshot and one downloading everything.
    public var bootstrap = true
    /// Delete records that others reference, and create records under any record (on by
    /// default; off keeps deletes to leaves, Specs/simulation.md §6).
    public var cascadingDeletes = true
    /// The in-process server refuses some devices' updates of some venues (``RefusalRule``);
    /// ignored with a remote server, which knows no such rule.
    public var refusals = true
    /// Every `plainSQLEvery`-th device (index % n == n - 1) writes its field updates with
    /// plain SQL through a second connection to its file; 0: none.
    public var plainSQLEvery = 3
    /// A third of the way through the rounds, the in-process server and every device move to
    /// ``LeagueSchema/upgraded`` (version 2), migrating their files with unsent changes in them.
    public var upgrade = false
    /// A sleeper (Specs/simulation.md, "A device that sleeps past the horizon"): device 0
    /// syncs in the first round only and then edits offline until the last round; halfway
    /// through, the in-process server compacts every tombstone, so it wakes behind the
    /// horizon and rebases, as does every other device behind it.
    public var sleeper = false
    /// Live mode (Specs/simulation.md §8): every device keeps a live channel open and never
    /// syncs explicitly during the rounds; its edits go out and others' changes come in by
    /// live mode alone, and the run checks that it converges before the explicit settle.
    public var live = false
    /// With `live`: the real time each round leaves live mode, after its edits.
    public var liveRoundPause: Duration = .milliseconds(100)
    /// With `live`: how long the devices may take to converge after the last round.
    public var liveDeadline: Duration = .seconds(120)
    public init() {}
}

/// What one way of bringing up a new device cost.
public struct BootstrapCost: Sendable, Equatable {
    public var seconds = 0.0
    public var requests = 0
    public var bytesOnWire = 0
    public var recordsReceived = 0
}

/// Everything a simulation measured and checked.
public struct SimulationReport: Sendable {
    public var options: SimulationOptions
    public var folder = ""
    public var seededRecords = 0, finalRecords = 0
    public var edits: [String: Int] = [:]
    /// Field edits written with plain SQL through a second connection.
    public var plainSQLEdits = 0
    /// With `upgrade`: what the server's migration changed, and how many device files migrated.
    public var upgradeChanges: [String] = [], upgradedDevices = 0
    /// With `upgrade`: how many rounds the devices with an odd index stay on version 1
    /// after the server and the others moved to version 2.
    public static let roundsBehind = 3
    /// With `upgrade`: completed syncs of devices on version 1 with the server on version 2.
    public var syncsBehind = 0
    /// With `sleeper`: what the compaction removed, the sleeper's rebase (its unsynced
    /// changes kept, the records it removed), and how many rebases every device began.
    public var compaction: CompactionReport?
    public var sleeperRebase: SyncRebase?
    public var rebases = 0
    public var syncs = 0, failedAttempts = 0
    public var wire = WireMetrics()
    public var conflicts: [ConflictKind: Int] = [:]
    public var conflictingChangeSets = 0, mergedRecords = 0
    public var faultsInjected: [FaultKind: Int] = [:], faultsSurvived: [FaultKind: Int] = [:]
    public var phases: [(name: String, seconds: Double)] = []
    /// The seeding device's download of the seed (before any edit).
    public var seedDownload: BootstrapCost?
    /// The late joiners: one from the seed's snapshot plus catch-up, one downloading everything.
    public var snapshotBootstrap: BootstrapCost?, downloadBootstrap: BootstrapCost?
    /// Devices whose data differs from the reference, with the tables that differ.
    public var divergences: [String] = []
    /// Devices left with changes they could not send.
    public var unsettled: [String] = []
    public var oracle = OracleResult()
    public var digest = ""
    /// With live mode: what the devices' live sessions did, and when they converged.
    public var live: LiveCounts?

    /// Whether every replica agrees and nothing the rules keep was lost.
    public var passed: Bool { divergences.isEmpty && unsettled.isEmpty && oracle.failureCount == 0 }

    /// The report as lines for a terminal.
    public func rendered() -> String {
        var out: [String] = []
        let o = options
        out.append("fieldmerge simulate: \(o.devices) devices, \(seededRecords) records, \(o.rounds) rounds, seed \(o.seed), mode \(o.mode.rawValue)"
            + (o.faults.isEnabled ? ", faults on" : "") + (o.live ? ", live" : ""))
        out.append("result: " + (passed ? "PASS: every replica holds the same data and no edit was lost" : "FAIL"))
        out.append("data: \(finalRecords) records at the end, digest \(digest.prefix(16))")
        out.append("edits: " + edits.sorted { $0.key < $1.key }.map { "\($0.key) \($0.value)" }.joined(separator: ", "))
        out.append("plain SQL: \(plainSQLEdits) field edits through a second connection, captured by the store; "
            + "refused by the server's rule: \(oracle.refusedEdits) edits, \(oracle.keptAside) records kept aside and accounted for, then discarded")
        if o.upgrade {
            out.append("upgrade to schema version 2: server file \(upgradeChanges.isEmpty ? "unchanged" : upgradeChanges.joined(separator: "; ")); "
                + "\(upgradedDevices) device files migrated (half of the devices \(Self.roundsBehind) rounds after the server, "
                + "after \(syncsBehind) syncs on version 1 with the server on version 2)")
        }
        if o.sleeper {
            let removed = compaction.map { "\($0.removed.tombstones) tombstones and \($0.removed.departures) departures, horizon \($0.horizon)" } ?? "nothing (not run)"
            let woke = sleeperRebase.map {
                "it rebased, keeping \($0.unsyncedKept) records' unsynced changes and removing \($0.removed) records the server no longer had\($0.finished ? "" : " (unfinished)")"
            } ?? "it did not rebase (nothing it held was compacted)"
            out.append("sleeper: device 0 slept from round 2 to the last; compaction halfway removed \(removed); \(woke); \(rebases) rebases in all")
        }
        out.append("delete policies: \(oracle.broughtBack) records deleted while another device edited them came back, \(oracle.deletedDespiteEdits) stayed deleted")
        out.append("syncs: \(syncs) completed, \(failedAttempts) failed attempts retried; requests \(wire.requests) (\(wire.rejected) refused as unreadable)")
        out.append("wire: up \(mb(wire.rawBytesUp)) raw / \(mb(wire.gzipBytesUp)) gzip; down \(mb(wire.rawBytesDown)) raw / \(mb(wire.gzipBytesDown)) gzip")
        out.append("conflicts: \(conflictingChangeSets) change sets answered as conflicts, \(mergedRecords) records merged; "
            + (conflicts.isEmpty ? "no field conflicts" : conflicts.sorted { $0.key.rawValue < $1.key.rawValue }.map { "\($0.key.rawValue) \($0.value)" }.joined(separator: ", ")))
        if let live {
            let converged = live.convergedAfter.map { "every device held the server's data with nothing pending \(secs($0)) after the last round, with no explicit sync" }
            out.append("live: " + (converged ?? "did not converge") + "; \(live.pagesApplied) pushed pages (\(live.recordsApplied) records) applied without a request, "
                + "\(live.syncs) live syncs (\(live.failedSyncs) failed and were retried), \(live.connections) connections (\(live.failedConnections) failed or dropped)")
        }
        if !faultsInjected.isEmpty {
            out.append("faults (injected/survived): " + faultsInjected.keys.sorted().map { "\($0.rawValue) \(faultsInjected[$0]!)/\(faultsSurvived[$0] ?? 0)" }.joined(separator: ", "))
        }
        let ways = [("seed download", seedDownload), ("late joiner from the seed snapshot + catch-up", snapshotBootstrap),
                    ("late joiner downloading everything", downloadBootstrap)]
        for (name, cost) in ways {
            guard let cost else { continue }
            out.append("bootstrap, \(name): \(secs(cost.seconds)), \(cost.requests) requests, \(mb(cost.bytesOnWire)) on the wire, \(cost.recordsReceived) records received")
        }
        out.append("time: " + phases.map { "\($0.name) \(secs($0.seconds))" }.joined(separator: ", ")
            + ", total \(secs(phases.reduce(0) { $0 + $1.seconds }))")
        out.append("oracle: \(oracle.records) records and \(oracle.fields) fields checked, \(oracle.failureCount) failures")
        for failure in oracle.failures { out.append("  lost or wrong: \(failure)") }
        for divergence in divergences { out.append("  diverged: \(divergence)") }
        for device in unsettled { out.append("  unsettled: \(device)") }
        if o.keepFolder { out.append("files kept in \(folder)") }
        return out.joined(separator: "\n")
    }

    private func mb(_ bytes: Int) -> String {
        bytes >= 1 << 20 ? "\(Double(bytes * 10 / (1 << 20)) / 10) MiB" : "\(Double(bytes * 10 / 1024) / 10) KiB"
    }

    private func secs(_ seconds: Double) -> String { "\(Double(Int(seconds * 100)) / 100) s" }
}
