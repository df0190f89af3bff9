import FieldMerge
import FieldMergeProtocol
import FieldMergeSQLite
import FieldMergeServer
import FieldMergeServerSQLite
import FieldMergeSync
import FieldMergeWorkload
import Foundation

/// `fieldmerge simulate --attachments`: devices attach files of 1 KB to 20 MB to records
/// offline (the same file on several devices), replace and delete them, and sync through a
/// server in this process while uploads and downloads are cut off part way, the server and
/// the apps restart, and garbage collection runs with no grace period. An oracle then checks
/// that every device holds the server's records, that every referenced attachment reads back
/// with its hash on every device that may see it, that no byte was uploaded twice, and that
/// no orphan remains after the grace period (Specs/simulation.md, "Attachments").
public final class AttachmentSimulation {
    /// Photos and documents, each with a text and an attachment. A `guest` may read photos
    /// only; devices sync as nobody in particular and read everything.
    public static let schema = try! Schema([
        Entity("photos", fields: [Field("caption", .text), Field("image", .attachment)]),
        Entity("documents", fields: [Field("title", .text), Field("file", .attachment)]),
    ])

    let options: AttachmentSimulationOptions
    let progress: Simulation.Progress?
    let folder: String
    var random: SplitMix64
    var report: AttachmentSimulationReport
    let slot = AttachmentServerSlot()
    let ledger = AttachmentLedger()
    var server: RevisionServer?
    var bytes: DirectoryAttachmentStore?
    var pool: AttachmentFilePool?
    var devices: [AttachmentDevice] = []
    /// The devices that attached each file of the pool, and the size of every hash attached.
    var attachedBy: [Int: Set<Int>] = [:]
    var sizes: [String: Int64] = [:]
    /// Set by tests to prove the oracle catches what it should: runs on the server's byte
    /// directory after the run settled, before the checks.
    public var tamper: ((String) -> Void)?

    public init(options: AttachmentSimulationOptions, progress: Simulation.Progress? = nil) throws {
        guard options.devices >= 2, options.files >= 2, options.rounds >= 0, options.editsPerDevice >= 0 else {
            throw SimulationError("simulate --attachments needs at least 2 devices and 2 files")
        }
        guard options.minFileBytes >= 1, options.maxFileBytes >= options.minFileBytes else {
            throw SimulationError("simulate --attachments: the smallest file must have a byte, and the largest at least as many")
        }
        for rate in [options.interruptRate, options.serverRestartRate, options.deviceRestartRate, options.editingShare, options.syncingShare]
        where !(0...1).contains(rate) {
            throw SimulationError("simulate --attachments: rates are between 0 and 1")
        }
        self.options = options
        self.progress = progress
        random = SplitMix64(seed: options.seed ^ 0xA77AC4)
        report = AttachmentSimulationReport(options: options)
        let parent = options.parentFolder ?? NSTemporaryDirectory()
        folder = "\(parent)/fieldmerge-attachments-\(options.seed)-\(UUID().uuidString.prefix(8))"
    }

    public func run() async throws -> AttachmentSimulationReport {
        try FileManager.default.createDirectory(atPath: "\(folder)/scratch", withIntermediateDirectories: true)
        defer {
            if options.keepFolder { report.folder = folder } else { try? FileManager.default.removeItem(atPath: folder) }
        }
        try await phase("files") {
            pool = try AttachmentFilePool(
                folder: "\(folder)/pool", count: options.files, minBytes: options.minFileBytes, maxBytes: options.maxFileBytes, random: &random)
            try openServer()
            try await openDevices()
        }
        try await phase("rounds") {
            for round in 0..<options.rounds {
                try await play(round)
                progress?("rounds", round + 1, options.rounds)
            }
        }
        try await phase("settle") { try await settle() }
        tamper?("\(folder)/server.attachments")
        try await phase("check") {
            try await check(afterCollection: false)
            try await collectAtEnd()
            try await check(afterCollection: true)
        }
        let seen = ledger.snapshot
        (report.uploadsCut, report.downloadsCut, report.busyRefusals) = (seen.uploadsCut, seen.downloadsCut, seen.busy)
        report.bytesDownloaded = seen.downloaded
        report.bytesUploaded = seen.received.values.reduce(0, +)
        report.bytesCollected = seen.removed.values.reduce(0, +)
        report.distinctBytes = seen.received.keys.reduce(0) { $0 + (sizes[$1] ?? 0) }
        for device in devices { await device.client.close() }
        await server?.close()
        return report
    }

    private func phase(_ name: String, _ body: () async throws -> Void) async throws {
        let start = ContinuousClock.now
        try await body()
        let elapsed = ContinuousClock.now - start
        report.phases.append((name, Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18))
    }

    // MARK: The server and the devices

    private func openServer() throws {
        let bytes = try DirectoryAttachmentStore(directory: "\(folder)/server.attachments")
        var serverOptions = RevisionServer.Options()
        serverOptions.attachments = bytes
        serverOptions.readable = { identity, entity in entity != "documents" || identity?.user != "guest" }
        let server = try RevisionServer(.file(path: "\(folder)/server.sqlite"), schema: Self.schema, options: serverOptions)
        (self.server, self.bytes) = (server, bytes)
        slot.set(InProcessTransport(server: server, attachmentMaxBytes: max(256 << 20, Int64(options.maxFileBytes))))
    }

    /// The server closes and opens again from its SQLite file and its byte directory.
    func restartServer() async throws {
        slot.set(nil)
        await server?.close()
        try openServer()
        report.serverRestarts += 1
    }

    /// Devices alternate their policy for photos (eager, on access); documents are opened on
    /// access, except on the last device, which never downloads them; the second device's
    /// cache holds at most a third of the largest file beyond it (eviction).
    private func openDevices() async throws {
        for index in 0..<options.devices {
            var policies: [String: AttachmentDownloadPolicy] = ["photos": index % 2 == 0 ? .eager : .onAccess, "documents": .onAccess]
            if index == options.devices - 1 { policies["documents"] = .never }
            let limit: Int64? = index == 1 ? Int64(options.maxFileBytes) + Int64(options.maxFileBytes / 3) : nil
            let link = AttachmentLink(
                slot: slot, ledger: ledger, scratch: "\(folder)/scratch", seed: random.next(), interruptRate: options.interruptRate)
            devices.append(try await AttachmentDevice(
                index: index, path: "\(folder)/device-\(index).sqlite", schema: Self.schema, link: link, policies: policies, cacheLimit: limit))
        }
    }

    func chance(_ rate: Double) -> Bool { rate > 0 && Double(random.next() >> 11) / Double(1 << 53) < rate }

    // MARK: Rounds

    private func play(_ round: Int) async throws {
        for device in devices where chance(options.editingShare) { try await edit(device, round: round) }
        let syncing = devices.filter { _ in chance(options.syncingShare) }
        for device in syncing where chance(options.deviceRestartRate) {
            try await device.restart()
            report.deviceRestarts += 1
        }
        await sync(syncing, attempts: 2)
        for device in syncing { try await readOne(device) }
        try await probe()
        if options.collectEvery > 0 && (round + 1) % options.collectEvery == 0 {
            report.removedDuringRun += try await collect().removed
            report.collections += 1
        }
        if chance(options.serverRestartRate) { try await restartServer() }
    }

    /// Offline edits: attach a file of the pool to a new record, attach another one to a
    /// record (its former bytes may become orphans), delete a record, edit a text.
    private func edit(_ device: AttachmentDevice, round: Int) async throws {
        guard let pool else { return }
        let entities = Self.schema.entities
        var rows = try await device.client.write { store in try AttachmentRow.read(store.database, entities: entities) }
        for edit in 0..<options.editsPerDevice {
            let entity = Self.schema.entities[random.below(2)]
            let (name, textField, fileField) = (entity.name, entity.fields[0].name, entity.fields[1].name)
            let candidates = rows.filter { $0.entity == name }
            let roll = random.below(100)
            let text = "d\(device.index) r\(round) e\(edit)"
            if roll < 45 || candidates.isEmpty {
                let file = pickFile(for: device)
                let (path, media) = (pool.paths[file], name == "photos" ? "image/jpeg" : "application/pdf")
                let reference = try await device.client.write { store in
                    let id = try store.untyped.insert(name, values: [.text(text), .null])
                    return try store.attach(contentsOf: path, mediaType: media, to: name, id: id, field: fileField)
                }
                sizes[reference.sha256] = reference.size
                report.attaches += 1
                continue
            }
            let target = candidates[random.below(candidates.count)]
            if roll < 65 {
                let file = pickFile(for: device)
                let path = pool.paths[file]
                let reference = try await device.client.write { store in
                    try store.attach(contentsOf: path, mediaType: "image/png", to: name, id: target.id, field: fileField)
                }
                sizes[reference.sha256] = reference.size
                (report.attaches, report.replaced) = (report.attaches + 1, report.replaced + 1)
            } else if roll < 80 {
                try await device.client.write { store in try store.untyped.delete(name, id: target.id) }
                rows.removeAll { $0.entity == name && $0.id == target.id }
                report.deleted += 1
            } else {
                _ = try await device.client.write { store in try store.untyped.update(name, id: target.id, [textField: .text(text)]) }
            }
        }
    }

    /// A file of the pool; counts attaches of a file another device attached before.
    private func pickFile(for device: AttachmentDevice) -> Int {
        let file = random.below(options.files)
        if attachedBy[file, default: []].contains(where: { $0 != device.index }) { report.sharedAttaches += 1 }
        attachedBy[file, default: []].insert(device.index)
        return file
    }

    /// What may fail a transfer while the devices sync at once with faults: a transfer cut
    /// off (`unreachable`), and a download of bytes whose records changed meanwhile (the
    /// server no longer has them all, or no record references them: `notFound`, `forbidden`).
    static let expectedDuringRounds: Set<AttachmentError.Code> = [.unreachable, .notFound, .forbidden]

    /// Syncs `syncing` at once, each up to `attempts` times until one completes. Failures of
    /// transfers the run cut off are expected; others are violations.
    func sync(_ syncing: [AttachmentDevice], attempts: Int) async {
        let outcomes = await withTaskGroup(of: [Result<SyncSummary, SyncError>].self) { group in
            for device in syncing {
                let client = device.client
                group.addTask {
                    var results: [Result<SyncSummary, SyncError>] = []
                    for _ in 0..<attempts {
                        do throws(SyncError) {
                            results.append(.success(try await client.sync()))
                            break
                        } catch {
                            results.append(.failure(error))
                        }
                    }
                    return results
                }
            }
            var all: [Result<SyncSummary, SyncError>] = []
            for await results in group { all += results }
            return all
        }
        for outcome in outcomes {
            switch outcome {
            case .success(let summary):
                report.syncs += 1
                // A cut transfer fails; so may a download of bytes whose last record another
                // device changed meanwhile (403: no record references them any more).
                for failure in summary.attachmentFailures where !Self.expectedDuringRounds.contains(failure.code) {
                    report.violation("a sync reported \(failure)")
                }
            case .failure: report.failedSyncs += 1
            }
        }
    }
}
