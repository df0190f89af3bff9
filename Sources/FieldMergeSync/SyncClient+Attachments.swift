import FieldMerge
import FieldMergeProtocol
import FieldMergeSQLite
import FieldMergeFiles

extension SyncClient {
    /// Sets when the attachments of `entity`'s records are downloaded (``AttachmentDownloadPolicy``;
    /// `onAccess` until set).
    public func setDownloadPolicy(_ policy: AttachmentDownloadPolicy, for entity: String) {
        downloadPolicies[entity] = policy
    }

    /// Sets how often a sync ends by removing the cached attachment files no record
    /// references and no upload needs (`Store.collectAttachmentsIfDue(everyMilliseconds:)`,
    /// the last time kept in the store's file, so that it holds across launches): once a day
    /// until set; nil never (the app calls `Store.collectAttachments()` itself).
    public func setAttachmentCollection(every interval: Duration?) {
        attachmentCollectionMilliseconds = interval.map { interval in
            let (seconds, attoseconds) = interval.components
            return max(0, seconds &* 1_000 &+ attoseconds / 1_000_000_000_000_000)
        }
    }

    /// After a sync of a schema with attachments: collects the cache when it is due. A
    /// failure does not fail the sync (its records are applied); the next sync tries again.
    func collectAttachmentsIfDue(summary: inout SyncSummary) {
        guard let interval = attachmentCollectionMilliseconds,
            store.schema.entities.contains(where: { $0.fields.contains { $0.type == .attachment } })
        else { return }
        if let removed = try? store.collectAttachmentsIfDue(everyMilliseconds: interval) { summary.attachmentsCollected += removed }
    }

    /// The download policy of `entity`.
    public func downloadPolicy(for entity: String) -> AttachmentDownloadPolicy { downloadPolicies[entity] ?? .onAccess }

    /// Sets (or removes, with nil) who hears the bytes of attachments move, up and down.
    /// Called on the client's executor: keep it short.
    public func setAttachmentProgress(_ handler: (@Sendable (AttachmentProgress) -> Void)?) {
        attachmentProgress = handler
    }

    /// The path of the bytes of `reference` in the cache, downloaded first when the cache
    /// does not hold them: streamed into a temporary file (resumed where a former download
    /// stopped), checked against the reference's SHA-256 and size (hashed as they arrive,
    /// with the store's `Store.attachmentHashing`), then renamed into the cache. Damaged
    /// bytes never enter it. Opening the same attachment twice at once downloads it once.
    ///
    /// - Parameters:
    ///   - reference: The attachment, as a record's attachment field holds it.
    ///   - entity: The entity whose record holds the reference: its policy
    ///     ``AttachmentDownloadPolicy/never`` forbids the download. Nil: no policy applies.
    /// - Throws: ``AttachmentError``.
    public func attachment(_ reference: AttachmentReference, entity: String? = nil) async throws(AttachmentError) -> String {
        do {
            releaseCatchUp()
            if let path = try store.attachmentPath(reference) { return path }
            if let entity, downloadPolicy(for: entity) == .never {
                throw AttachmentError(.notCached, "the attachment is not cached and \(entity)'s attachments are never downloaded", isRetryable: false)
            }
            if let running = attachmentDownloads[reference.sha256] { return try await running.value }
            let task = Task { try await self.download(reference) }
            attachmentDownloads[reference.sha256] = task
            defer { attachmentDownloads[reference.sha256] = nil }
            return try await task.value
        } catch {
            throw AttachmentError(classifying: error)
        }
    }

    /// The bytes of `reference`, whole, as ``attachment(_:entity:)`` finds or downloads them:
    /// for an app that wants a value (a small image); large files are better opened by path.
    public func attachmentBytes(_ reference: AttachmentReference, entity: String? = nil) async throws(AttachmentError) -> [UInt8] {
        _ = try await attachment(reference, entity: entity)
        do {
            guard let bytes = try store.attachmentBytes(reference) else {
                throw AttachmentError(.notCached, "the attachment left the cache while it was read", isRetryable: true)
            }
            return bytes
        } catch {
            throw AttachmentError(classifying: error)
        }
    }

    /// Downloads `reference` into the cache.
    private func download(_ reference: AttachmentReference) async throws -> String {
        guard let transport = transport as? any AttachmentTransport else {
            throw AttachmentError(.unsupported, "the client's transport does not carry attachments", isRetryable: false)
        }
        let (sha256, size) = (reference.sha256, reference.size)
        let partial = try store.attachmentDownloadPath(reference)
        var have = try AttachmentFiles.size(of: partial) ?? 0
        if have > size {
            AttachmentFiles.remove(partial)
            have = 0
        }
        // Hashed as the bytes arrive (those of a former download first).
        let digest = DownloadDigest(path: partial, hashing: store.attachmentHashing, start: have)
        if have == 0 || have < size {
            let (start, report) = (have, attachmentProgress)
            let progress = { @Sendable (bytes: Int64) in
                digest.advance(to: start + bytes)
                report?(AttachmentProgress(sha256: sha256, direction: .download, bytes: start + bytes, total: size))
            }
            // The range, always (a transport may ask for it in pieces); none for no bytes.
            try await transport.downloadAttachment(
                sha256, range: size == 0 ? nil : have..<size, to: partial, progress: progress, received: { digest.absorb($0) })
        }
        let got = try digest.finish()
        guard got.sha256 == sha256, got.size == size else {
            AttachmentFiles.remove(partial)
            throw AttachmentError(
                .corrupt, "the \(got.size) bytes downloaded have the SHA-256 \(got.sha256), not the reference's \(size) bytes of \(sha256): discarded",
                isRetryable: true)
        }
        releaseCatchUp()
        return try store.adoptAttachment(partial, as: reference)
    }

    /// Sets how many eager downloads (``AttachmentDownloadPolicy/eager``) run at once after
    /// a sync: 4 until set, at least 1. Several at once hide each download's round trips
    /// (a phone on a slow network with many small photos); each still streams into its file.
    public func setEagerDownloadConcurrency(_ count: Int) {
        eagerDownloadConcurrency = max(1, count)
    }

    /// After a sync: downloads what records of entities with the policy
    /// ``AttachmentDownloadPolicy/eager`` reference and the cache lacks, up to
    /// ``setEagerDownloadConcurrency(_:)`` at a time. Failures are reported in
    /// ``SyncSummary/attachmentFailures``; they do not fail the sync, whose records are applied.
    func downloadEagerAttachments(summary: inout SyncSummary) async {
        let eager = store.schema.entities.map(\.name).filter { downloadPolicies[$0] == .eager }
        var wanted: [(entity: String, reference: AttachmentReference)] = []
        var seen = Set<String>()
        for entity in eager {
            let references: [AttachmentReference]
            do { references = try store.attachmentReferences(of: entity) } catch { continue }
            for reference in references where seen.insert(reference.sha256).inserted {
                do {
                    if try store.attachmentPath(reference) == nil { wanted.append((entity, reference)) }
                } catch {
                    summary.attachmentFailures.append(Self.downloadFailure(reference, error))
                }
            }
        }
        guard !wanted.isEmpty else { return }
        let width = eagerDownloadConcurrency
        var next = wanted.makeIterator()
        await withTaskGroup(of: (AttachmentReference, (any Error)?).self) { group in
            func startNext() {
                guard !Task.isCancelled, let item = next.next() else { return }
                group.addTask {
                    do {
                        _ = try await self.attachment(item.reference, entity: item.entity)
                        return (item.reference, nil)
                    } catch {
                        return (item.reference, error)
                    }
                }
            }
            for _ in 0..<width { startNext() }
            while let (reference, error) = await group.next() {
                if let error {
                    summary.attachmentFailures.append(Self.downloadFailure(reference, error))
                } else {
                    summary.attachmentsDownloaded += 1
                }
                startNext()
            }
        }
    }

    /// A failed download as the summary reports it.
    static func downloadFailure(_ reference: AttachmentReference, _ error: any Error) -> AttachmentFailure {
        let failure = AttachmentError(classifying: error)
        return AttachmentFailure(reference: reference, direction: .download, code: failure.code, message: failure.message, attempts: 1, givenUp: false)
    }
}
