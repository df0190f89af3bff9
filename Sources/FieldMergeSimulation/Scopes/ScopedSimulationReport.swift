import FieldMerge
import FieldMergeServer

/// What `fieldmerge simulate --scopes` may do (Specs/simulation.md, "Scopes").
public struct ScopedSimulationOptions: Sendable {
    public var devices = 12
    /// Users (`u0`, an admin, to `u<users - 1>`); devices are dealt to them in turn. Nil:
    /// half the devices, between 2 and 6.
    public var users: Int?
    public var projects = 8
    /// Tasks seeded (about half get a comment).
    public var tasks = 200
    public var rounds = 10
    public var seed: UInt64 = 1
    /// Local edits per device that goes offline in a round.
    public var editsPerDevice = 10
    public var editingShare = 0.8, syncingShare = 0.7
    /// The share of non-admin devices that try a write outside their scope in a round.
    public var probingShare = 0.3
    public var faults = FaultRates.none
    public var mode = RevisionServer.Mode.strict
    public var parentFolder: String?
    public var keepFolder = false
    /// Whether devices of users move tasks between the projects they hold (the admin always
    /// moves some). Such moves met client bugs this simulation found (Specs/simulation.md,
    /// "Scopes"); off, a run leaves them out.
    public var usersMove = true
    /// Whether half of the writes sent outside the scope on purpose name an older revision of
    /// the record (as a device that held it once would); off, they name its current one.
    public var staleProbes = true
    /// Whether the server is given the scope rules. Off, it sends everything to everyone:
    /// the oracle must report the leaks (a test of the oracle).
    public var serverScopes = true
    public init() {}

    /// The users the run has.
    var userCount: Int { users ?? min(6, max(2, devices / 2)) }
}

/// What a scoped run did and found.
public struct ScopedSimulationReport: Sendable {
    public var options: ScopedSimulationOptions
    public var folder = ""
    public var seededRecords = 0, finalRecords = 0
    /// Servers in other processes the run synced with (0: its own in this process).
    public var remoteServers = 0
    /// Memberships added and removed by the admin device, tasks moved (by the admin and by
    /// users between their projects), roles granted or revoked.
    public var joins = 0, leaves = 0, moves = 0, roleChanges = 0
    /// Ids the server listed under `leave` in the answers it gave the devices.
    public var leavesReceived = 0
    /// Changes the devices kept aside because their records left (`outOfScope`), and
    /// changes the server refused as `unauthorized` and the devices kept (then discarded).
    public var keptAside = 0, refusedKept = 0
    /// Records refused as `unauthorized` in the answers (writes outside the scope).
    public var refusals = 0
    /// Writes outside the scope sent on purpose (an update, delete or create under a
    /// project the user does not hold), and those the server refused.
    public var probes = 0, probesRefused = 0
    /// Marks (raises of points, tasks created): in the data, given up with a change kept
    /// aside or refused, or gone with their task.
    public var marksConfirmed = 0, marksGivenUp = 0, marksGone = 0
    public var syncs = 0, failedAttempts = 0
    /// Answers the watch read, the records of scoped entities in them, and records it
    /// could not judge (created and deleted between two of its reads).
    public var responses = 0, recordsInspected = 0, unjudged = 0
    public var faultsInjected: [FaultKind: Int] = [:], faultsSurvived: [FaultKind: Int] = [:]
    public var phases: [(name: String, seconds: Double)] = []
    /// What the oracle found wrong: the first 30, and how many in all.
    public var violations: [String] = []
    public var violationCount = 0
    /// Devices left with changes they could not send, or behind the server.
    public var unsettled: [String] = []

    public var passed: Bool { violationCount == 0 && unsettled.isEmpty }

    public func rendered() -> String {
        let o = options
        var out: [String] = []
        out.append("fieldmerge simulate --scopes: \(o.devices) devices of \(o.userCount) users, \(o.projects) projects, "
            + "\(seededRecords) records, \(o.rounds) rounds, seed \(o.seed), mode \(o.mode.rawValue)" + (o.faults.isEnabled ? ", faults on" : "")
            + (o.serverScopes ? "" : ", SERVER WITHOUT SCOPES")
            + (remoteServers > 0 ? ", \(remoteServers) remote server\(remoteServers == 1 ? "" : "s")" + (o.faults.restart ? " (not restarted)" : "") : ""))
        out.append("result: " + (passed
            ? "PASS: every device holds exactly its user's records, nothing outside its scope reached it, no acknowledged edit was lost"
            : "FAIL"))
        out.append("data: \(finalRecords) records at the end")
        out.append("who sees what: \(joins) joins, \(leaves) leaves, \(moves) moves, \(roleChanges) role changes; "
            + "\(leavesReceived) records left devices")
        out.append("outside the scope: \(refusals) writes refused (\(probesRefused) of \(probes) probes), "
            + "\(keptAside) changes kept aside as outOfScope, \(refusedKept) kept as refused; all noted, then discarded")
        out.append("marks: \(marksConfirmed) in the data, \(marksGivenUp) given up with a change kept aside or refused, \(marksGone) gone with their task")
        out.append("syncs: \(syncs) completed, \(failedAttempts) failed attempts retried")
        out.append("watch: \(responses) answers read, \(recordsInspected) scoped records checked against their user's grants, \(unjudged) unjudged")
        if !faultsInjected.isEmpty {
            out.append("faults (injected/survived): " + faultsInjected.keys.sorted().map { "\($0.rawValue) \(faultsInjected[$0]!)/\(faultsSurvived[$0] ?? 0)" }.joined(separator: ", "))
        }
        out.append("time: " + phases.map { "\($0.name) \(Double(Int($0.seconds * 100)) / 100) s" }.joined(separator: ", "))
        out.append("oracle: \(violationCount) violations")
        for violation in violations { out.append("  violation: \(violation)") }
        for device in unsettled { out.append("  unsettled: \(device)") }
        if o.keepFolder { out.append("files kept in \(folder)") }
        return out.joined(separator: "\n")
    }
}
