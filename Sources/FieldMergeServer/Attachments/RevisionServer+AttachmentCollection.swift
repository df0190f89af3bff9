import FieldMerge

extension RevisionServer {
    /// Removes attachment bytes nothing needs any more (Specs/attachments.md §6): finished
    /// ones no record references, and partial uploads, each unchanged (not written,
    /// finished, or referenced by a request) for `seconds`.
    ///
    /// A finished hash counts as referenced while any record of the data set holds it in an
    /// attachment field, retired fields included; deleted records do not count. The store
    /// removes a hash only if it is still unchanged for `seconds` at that moment, so a
    /// request that references it meanwhile keeps it (``CollectingAttachmentStore/keep(_:)``).
    /// Hashes are taken 256 prefixes at a time, each prefix's references read in one
    /// read transaction between requests.
    ///
    /// - Parameters:
    ///   - seconds: The grace period.
    ///   - dryRun: Count what would go, remove nothing.
    /// - Returns: What was examined and removed; nothing without a collecting store.
    public func collectAttachments(unusedFor seconds: Int64, dryRun: Bool = false) async throws(ServerError) -> AttachmentCollectionReport {
        var report = AttachmentCollectionReport(dryRun: dryRun)
        guard let store = options.attachments as? any CollectingAttachmentStore else { return report }
        let fields = entities.flatMap { entity in
            entity.entity.fields.indices.compactMap { entity.entity.fields[$0].type == .attachment ? (entity, $0) : nil }
        }
        do {
            for prefix in (0..<256).map(Self.hexPrefix) {
                let found = try await store.unchanged(for: seconds, prefix: prefix)
                guard !found.isEmpty else { continue }
                let finished = found.filter { if case .complete = $0.held { true } else { false } }.map(\.sha256)
                let referenced = try await referenced(finished, fields: fields)
                for entry in found {
                    report.examined += 1
                    if referenced.contains(entry.sha256) {
                        report.referenced += 1
                        continue
                    }
                    if !dryRun, try await !store.remove(entry.sha256, ifUnchangedFor: seconds) { continue }
                    switch entry.held {
                    case .complete(let size):
                        report.removedFinished += 1
                        report.bytesRemoved += size
                    case .partial(let bytes):
                        report.removedPartial += 1
                        report.bytesRemoved += bytes
                    case .absent: break
                    }
                }
            }
        } catch {
            throw Self.serverError(error)
        }
        return report
    }

    /// The hashes among `hashes` that a record holds in one of `fields`: one read
    /// transaction, taking its turn with requests.
    private func referenced(_ hashes: [String], fields: [(ServerEntity, Int)]) async throws -> Set<String> {
        guard !hashes.isEmpty, !fields.isEmpty else { return [] }
        await turnstile.enter()
        defer { turnstile.leave() }
        return try await storage.read { () async throws -> Set<String> in
            var found = Set<String>()
            for sha256 in hashes {
                for (entity, field) in fields where try await !storage.records(entity, field: field, beginningWith: "sha256:\(sha256);", limit: 1).isEmpty {
                    found.insert(sha256)
                    break
                }
            }
            return found
        }
    }

    private static func hexPrefix(_ value: Int) -> String {
        let digits = Array("0123456789abcdef")
        return String([digits[value >> 4], digits[value & 15]])
    }
}

/// What ``RevisionServer/collectAttachments(unusedFor:dryRun:)`` found and removed.
public struct AttachmentCollectionReport: Sendable, Equatable, CustomStringConvertible {
    /// Hashes unchanged for the grace period.
    public var examined = 0
    /// Of those, finished ones a record references (kept).
    public var referenced = 0
    /// Finished hashes removed (or, in a dry run, that would be).
    public var removedFinished = 0
    /// Partial uploads removed (or that would be).
    public var removedPartial = 0
    /// Their bytes.
    public var bytesRemoved: Int64 = 0
    public var dryRun: Bool

    public init(dryRun: Bool) { self.dryRun = dryRun }

    public var description: String {
        let verb = dryRun ? "would remove" : "removed"
        return "attachments: \(examined) unchanged for the grace period, \(referenced) referenced; "
            + "\(verb) \(removedFinished) finished and \(removedPartial) partial (\(bytesRemoved) bytes)"
    }
}
