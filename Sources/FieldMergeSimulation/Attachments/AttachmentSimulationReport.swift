/// What `fieldmerge simulate --attachments` may do (Specs/simulation.md, "Attachments").
public struct AttachmentSimulationOptions: Sendable {
    public var devices = 6
    public var rounds = 8
    public var seed: UInt64 = 1
    /// Distinct files the devices attach: each attach picks one of them, so the same file is
    /// attached on several devices (deduplication).
    public var files = 24
    /// The smallest and largest file; sizes spread evenly on a logarithmic scale.
    public var minFileBytes = 1 << 10
    public var maxFileBytes = 20 << 20
    /// Local edits per device that goes offline in a round.
    public var editsPerDevice = 3
    public var editingShare = 0.7, syncingShare = 0.8
    /// The share of uploads and downloads cut off part way (the connection drops after a
    /// random number of bytes: the server keeps what arrived, the device what it received).
    public var interruptRate = 0.25
    /// The share of rounds after which the server is closed and opened again from its files,
    /// and of a device's syncs before which the app restarts (its store closed and reopened).
    public var serverRestartRate = 0.25, deviceRestartRate = 0.15
    /// Every this many rounds, the server collects garbage with a grace period of zero (the
    /// harshest: unfinished uploads and bytes no record references yet go) and the devices
    /// collect theirs; 0: only at the end.
    public var collectEvery = 3
    public var parentFolder: String?
    public var keepFolder = false
    public init() {}
}

/// What an attachment run did and found.
public struct AttachmentSimulationReport: Sendable {
    public var options: AttachmentSimulationOptions
    public var folder = ""
    /// Attaches made by devices, and those of a file another device had attached before.
    public var attaches = 0, sharedAttaches = 0
    public var replaced = 0, deleted = 0
    public var syncs = 0, failedSyncs = 0
    /// Uploads and downloads cut off part way, and refusals the server gave an upload
    /// because another one of the same hash held it.
    public var uploadsCut = 0, downloadsCut = 0, busyRefusals = 0
    public var serverRestarts = 0, deviceRestarts = 0
    /// Bytes the devices uploaded, the bytes of the distinct files the server was sent, and
    /// bytes garbage collection removed during the run (which devices then sent again).
    public var bytesUploaded: Int64 = 0, distinctBytes: Int64 = 0, bytesCollected: Int64 = 0
    public var bytesDownloaded: Int64 = 0
    /// Attachments read back and checked against their hash, on every device, and reads a
    /// `never` policy refused as it should.
    public var readsChecked = 0, readsRefusedByPolicy = 0
    /// Downloads tried by a user who may not read the records that reference them (all
    /// must be refused), and ranges past the end asked for (all must be refused).
    public var forbiddenProbes = 0, rangeProbes = 0
    /// At the end, after the grace period: attachments the server held, removed, and kept
    /// (those records reference); files the devices' caches removed.
    public var finalHeld = 0, finalRemoved = 0, finalReferenced = 0, deviceFilesRemoved = 0
    /// Collections during the rounds (no grace period), and the attachments they removed.
    public var collections = 0, removedDuringRun = 0
    public var phases: [(name: String, seconds: Double)] = []
    /// What the oracle found wrong: the first 30, and how many in all.
    public var violations: [String] = []
    public var violationCount = 0

    public var passed: Bool { violationCount == 0 }

    public init(options: AttachmentSimulationOptions) { self.options = options }

    mutating func violation(_ text: String) {
        violationCount += 1
        if violations.count < 30 { violations.append(text) }
    }

    public func rendered() -> String {
        let o = options
        let mib = { (bytes: Int64) in String(format: "%.1f MiB", Double(bytes) / 1_048_576) }
        var out: [String] = []
        out.append("fieldmerge simulate --attachments: \(o.devices) devices, \(o.rounds) rounds, \(o.files) files of \(o.minFileBytes) B to \(mib(Int64(o.maxFileBytes))), seed \(o.seed)")
        out.append("  attaches: \(attaches) (\(sharedAttaches) of a file another device attached), replaced \(replaced), records deleted \(deleted)")
        out.append("  syncs: \(syncs), failed \(failedSyncs); uploads cut \(uploadsCut), downloads cut \(downloadsCut), busy \(busyRefusals)")
        out.append("  restarts: server \(serverRestarts), apps \(deviceRestarts)")
        out.append("  uploaded \(mib(bytesUploaded)) for \(mib(distinctBytes)) of distinct files (\(mib(bytesCollected)) collected during the run and sent again); downloaded \(mib(bytesDownloaded))")
        out.append("  reads checked: \(readsChecked), refused by a never policy: \(readsRefusedByPolicy); forbidden downloads refused: \(forbiddenProbes), ranges past the end refused: \(rangeProbes)")
        out.append("  collections during the rounds: \(collections), removing \(removedDuringRun) attachments (finished or not)")
        out.append("  after the grace period: server held \(finalHeld), removed \(finalRemoved), kept \(finalReferenced) referenced; device cache files removed \(deviceFilesRemoved)")
        if !phases.isEmpty {
            out.append("  time: " + phases.map { String(format: "%@ %.1f s", $0.name, $0.seconds) }.joined(separator: ", "))
        }
        if !folder.isEmpty { out.append("  files kept in \(folder)") }
        if passed {
            out.append("PASSED: every device holds the server's records; every referenced attachment reads back with its hash; nothing was uploaded twice; no orphan remains")
        } else {
            out.append("FAILED: \(violationCount) violation(s)")
            out += violations.map { "  - \($0)" }
        }
        return out.joined(separator: "\n")
    }
}
