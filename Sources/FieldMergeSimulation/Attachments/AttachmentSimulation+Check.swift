import FieldMerge
import FieldMergeFiles
import FieldMergeProtocol
import FieldMergeSQLite
import FieldMergeServer
import FieldMergeServerSQLite
import FieldMergeSync
import Foundation

extension AttachmentSimulation {
    // MARK: Reads and probes

    /// The device opens one attachment its records reference, picked at random.
    func readOne(_ device: AttachmentDevice) async throws {
        let rows = try await rows(of: device).filter { $0.reference != nil }
        guard !rows.isEmpty else { return }
        await read(rows[random.below(rows.count)], on: device, final: false)
    }

    /// Opens the attachment of `row` on `device` and checks the bytes against the reference.
    /// A `never` policy must refuse what the cache lacks; during the rounds what
    /// ``expectedDuringRounds`` names may fail a read, at the end nothing may.
    func read(_ row: AttachmentRow, on device: AttachmentDevice, final: Bool) async {
        guard let reference = row.reference else { return }
        do {
            let path = try await device.client.attachment(reference, entity: row.entity)
            let got = try AttachmentFiles.hash(path)
            guard got.sha256 == reference.sha256, got.size == reference.size else {
                return report.violation("device \(device.index) read \(got.size) bytes of \(got.sha256) for \(row)")
            }
            report.readsChecked += 1
        } catch let error as AttachmentError {
            if error.code == .notCached && device.policy(row.entity) == .never {
                report.readsRefusedByPolicy += 1
            } else if final || !Self.expectedDuringRounds.contains(error.code) {
                report.violation("device \(device.index) could not read \(row): \(error)")
            }
        } catch {
            report.violation("device \(device.index) could not hash the file of \(row): \(error)")
        }
    }

    /// A `guest` (who may read photos only) asks for the bytes of a document no photo
    /// references, and for a range past the end of a photo: both must be refused.
    func probe() async throws {
        guard let server else { return }
        let rows = try await serverRows()
        let photoHashes = Set(rows.filter { $0.entity == "photos" }.compactMap { $0.reference?.sha256 })
        let guest = InProcessTransport(server: server, identity: SyncIdentity(user: "guest"))
        let target = "\(folder)/scratch/probe"
        defer { try? FileManager.default.removeItem(atPath: target) }
        let documents = rows.filter { $0.entity == "documents" }.compactMap(\.reference).filter { !photoHashes.contains($0.sha256) }
        if !documents.isEmpty {
            let reference = documents[random.below(documents.count)]
            do {
                try await guest.downloadAttachment(reference.sha256, range: nil, to: target, progress: nil)
                report.violation("a guest downloaded the document attachment \(reference.sha256)")
            } catch {
                if (error as? SyncRequestRejected)?.status == 403 { report.forbiddenProbes += 1 } else {
                    report.violation("a guest's download of a document was refused with \(error), not 403")
                }
            }
        }
        let photos = rows.filter { $0.entity == "photos" }.compactMap(\.reference)
        if !photos.isEmpty {
            let reference = photos[random.below(photos.count)]
            do {
                try await guest.downloadAttachment(reference.sha256, range: reference.size..<(reference.size + 1), to: target, progress: nil)
                report.violation("a range past the end of \(reference.sha256) was answered")
            } catch {
                if (error as? SyncRequestRejected)?.status == 416 { report.rangeProbes += 1 } else {
                    report.violation("a range past the end was refused with \(error), not 416")
                }
            }
        }
    }

    // MARK: Garbage

    /// Collects garbage with no grace period on the server (counting, per hash, the bytes it
    /// removed: those may be sent again) and on every device.
    /// - Returns: What the server held before, and what it removed.
    func collect() async throws -> (held: Int, removed: Int) {
        guard let server else { return (0, 0) }
        let before = try await heldHashes()
        _ = try await server.collectAttachments(unusedFor: 0)
        let after = try await heldHashes()
        for (sha256, held) in before where after[sha256] == nil {
            switch held {
            case .absent: break
            case .partial(let bytes): ledger.removed(sha256, bytes)
            case .complete(let size): ledger.removed(sha256, size)
            }
        }
        for device in devices { report.deviceFilesRemoved += try await device.client.write { store in try store.collectAttachments() } }
        return (before.count, before.count - after.count)
    }

    /// What the server's byte directory holds, finished or not, by hash.
    func heldHashes() async throws -> [String: AttachmentHeld] {
        guard let bytes else { return [:] }
        var held: [String: AttachmentHeld] = [:]
        for prefix in 0..<256 {
            for entry in try await bytes.unchanged(for: 0, prefix: String(format: "%02x", prefix)) { held[entry.sha256] = entry.held }
        }
        return held
    }

    /// After the grace period: the server keeps exactly what records reference, and each
    /// device's cache nothing its records do not reference.
    func collectAtEnd() async throws {
        report.deviceFilesRemoved = 0
        let (held, removed) = try await collect()
        (report.finalHeld, report.finalRemoved) = (held, removed)
        let referenced = Set(try await serverRows().compactMap { $0.reference?.sha256 })
        report.finalReferenced = referenced.count
        let kept = Set(try await heldHashes().keys)
        for orphan in kept.subtracting(referenced).sorted() { report.violation("the server kept the orphan \(orphan)") }
        for lost in referenced.subtracting(kept).sorted() { report.violation("the server removed \(lost), which a record references") }
        for device in devices {
            let mine = Set(try await rows(of: device).compactMap { $0.reference?.sha256 })
            let cached = try await device.client.write { store in try store.attachmentCache().cachedDigests() }
            for orphan in Set(cached).subtracting(mine).sorted() { report.violation("device \(device.index) kept the orphan \(orphan)") }
        }
    }

    // MARK: Settling and the oracle

    /// No more faults: every device syncs in turn until a whole pass moves nothing.
    func settle() async throws {
        for device in devices { device.link.setInterruptRate(0) }
        for pass in 0..<10 {
            var quiet = true
            for device in devices {
                do {
                    let summary = try await device.client.sync()
                    report.syncs += 1
                    if summary.sent > 0 || summary.received > 0 || summary.attachmentsUploaded > 0 || summary.attachmentsDownloaded > 0
                        || !summary.attachmentFailures.isEmpty
                    {
                        quiet = false
                    }
                } catch {
                    report.failedSyncs += 1
                    quiet = false
                }
            }
            if quiet && pass > 0 { return }
        }
        report.violation("the devices did not settle in 10 passes")
    }

    /// The oracle. Every device holds the server's records, nothing unsent; the server holds
    /// every referenced attachment whole; eager devices hold every photo; the limited cache
    /// keeps to its limit; every device reads every attachment its records reference with
    /// the right hash (or its `never` policy refuses); no hash received more bytes than its
    /// size, beyond what garbage collection removed.
    func check(afterCollection: Bool) async throws {
        let serverRows = try await serverRows()
        for device in devices {
            let rows = try await rows(of: device)
            if rows != serverRows {
                let difference = zip(rows, serverRows).first { $0 != $1 }.map { "\($0.0) against the server's \($0.1)" }
                    ?? "\(rows.count) records against the server's \(serverRows.count)"
                report.violation("device \(device.index) differs from the server: \(difference)")
            }
            let (unsent, queued) = try await device.client.write { store in
                (try store.unsyncedChanges(), try store.queuedAttachments().count)
            }
            for change in unsent {
                let why = change.refusal.map { "refused: \($0.code) \($0.message)" } ?? "waiting"
                report.violation("device \(device.index) kept a change of \(change.entity) \(change.id) (\(change.kind), \(why))")
            }
            if queued > 0 { report.violation("device \(device.index) kept \(queued) uploads queued") }
        }
        for reference in Set(serverRows.compactMap(\.reference?.text)).sorted() {
            guard let reference = try? AttachmentReference(parsing: reference) else { continue }
            let held = try await bytes?.held(reference.sha256)
            if held != .complete(size: reference.size) {
                report.violation("the server holds \(String(describing: held)) of \(reference.sha256), which a record references")
            }
        }
        if !afterCollection { try await checkCaches(serverRows) }
        for device in devices {
            var seen = Set<String>()
            for row in serverRows where row.reference != nil && seen.insert(row.reference!.sha256).inserted {
                await read(row, on: device, final: true)
            }
        }
        let seen = ledger.snapshot
        for (sha256, received) in seen.received.sorted(by: { $0.key < $1.key }) {
            let allowed = (sizes[sha256] ?? 0) + (seen.removed[sha256] ?? 0)
            if received > allowed { report.violation("the server received \(received) bytes of \(sha256), of \(sizes[sha256] ?? 0) (uploaded twice)") }
        }
    }

    /// Eager devices hold every photo without opening one; the limited cache keeps to its
    /// limit (beyond the one file a download may keep past it).
    private func checkCaches(_ serverRows: [AttachmentRow]) async throws {
        let photos = serverRows.filter { $0.entity == "photos" }.compactMap(\.reference)
        for device in devices {
            let (missing, cachedBytes) = try await device.client.write { store in
                let missing = try photos.filter { try store.attachmentPath($0) == nil }.count
                let cache = try store.attachmentCache()
                let total = try cache.cachedDigests().reduce(Int64(0)) { $0 + (try AttachmentFiles.size(of: cache.path($1)) ?? 0) }
                return (missing, total)
            }
            if device.policy("photos") == .eager && missing > 0 {
                report.violation("device \(device.index) downloads photos eagerly and lacks \(missing) of them")
            }
            if let limit = device.cacheLimit, cachedBytes > limit {
                report.violation("device \(device.index) caches \(cachedBytes) bytes, past its limit of \(limit)")
            }
        }
    }

    // MARK: Reading records

    func rows(of device: AttachmentDevice) async throws -> [AttachmentRow] {
        let entities = Self.schema.entities
        return try await device.client.write { store in try AttachmentRow.read(store.database, entities: entities) }
    }

    func serverRows() async throws -> [AttachmentRow] {
        guard let server else { return [] }
        let entities = Self.schema.entities
        return try await server.withSQLite { database in try AttachmentRow.read(database, entities: entities) } ?? []
    }
}
