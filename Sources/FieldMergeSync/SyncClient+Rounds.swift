import FieldMerge
import FieldMergeProtocol
import FieldMergeSQLite

extension SyncClient {
    /// Runs rounds until nothing is left to send and catch-up has no more pages; answered
    /// `resetRequired`, rebases (``Store/beginRebase()``) and goes on.
    func run(job: Int, maxRounds: Int) async -> Result<SyncSummary, SyncError> {
        var summary = SyncSummary()
        var rebases = 0
        while true {
            do {
                var done = try await rounds(job: job, maxRounds: maxRounds, summary: &summary)
                await downloadEagerAttachments(summary: &done)
                collectAttachmentsIfDue(summary: &done)
                return .success(done)
            } catch let rejected as SyncRequestRejected where rejected.code == SyncStatus.resetRequired && rebases < Self.maxRebases {
                // Deletes this replica has not seen were compacted on the server: download
                // everything again, keeping every unsynced change (Specs/store.md).
                rebases += 1
                do {
                    let kept = try store.beginRebase()
                    summary.rebase = SyncRebase(began: true, unsyncedKept: kept)
                } catch {
                    return .failure(SyncError(classifying: error, completed: summary))
                }
            } catch {
                return .failure(SyncError(classifying: explainingSchema(error), completed: summary))
            }
        }
    }

    /// How many times one sync starts a rebase over (compaction may move the horizon again
    /// while it downloads).
    static let maxRebases = 3

    /// Rounds until nothing is left to send and catch-up has no more pages; a rebase under
    /// way ends once its download is complete.
    private func rounds(job: Int, maxRounds: Int, summary: inout SyncSummary) async throws -> SyncSummary {
        var refused: Set<String> = []
        var previous: RoundOutcome?
        var ahead: Prefetch?
        defer { ahead?.cancel() }
        let restoreCache = try downloadCache()
        defer { restoreCache() }
        do {
            // The bytes of attachments go before any record that references them, the
            // request in flight included.
            try await uploadAttachments(summary: &summary, requeue: true)
            // A request whose answer never arrived goes first, as it was: the server answers
            // it once, whether it took it or not, before anything else is sent.
            try await resendInFlight(summary: &summary, refused: &refused)
            var caughtUp = false
            while summary.rounds < maxRounds {
                try Task.checkCancellation()
                // Writes made with plain SQL since the last round become pending changes.
                let pending = try probe.measure(.clientRead) {
                    try store.captureExternalWrites()
                    return try store.pendingChanges(limit: batchSize)
                }
                // Attachments made since (a write between rounds) go before their records.
                if !pending.isEmpty { try await uploadAttachments(summary: &summary) }
                let outcome = try await round(pending, summary: &summary, refused: &refused, ahead: &ahead)
                defer { previous = outcome }
                caughtUp = !outcome.hasMore
                report(SyncProgress(round: summary.rounds, received: summary.received, sent: summary.sent, hasMore: outcome.hasMore), job: job)
                // The same request refused twice in a row makes no progress (a create the server
                // will not take): stop, and leave it pending for the app to see.
                if outcome.conflicts > 0, let previous, previous.conflicts > 0, previous.requestID == outcome.requestID { break }
                if pending.isEmpty && !outcome.hasMore { break }
                let settled = try store.pendingChanges(limit: 1).isEmpty
                if !outcome.hasMore && settled { break }
                // An app's write waiting for the executor runs now (committing the
                // catch-up's transaction first), not after the whole catch-up.
                await letWaitingWorkIn()
            }
            try commitCatchUp()
            if caughtUp, store.isRebasing {
                let (removed, kept) = try store.finishRebase()
                var rebase = summary.rebase ?? SyncRebase(began: false, unsyncedKept: 0)
                rebase.finished = true
                rebase.removed = removed
                rebase.keptWithChanges = kept
                summary.rebase = rebase
            }
            return summary
        } catch {
            // Pages applied whole stay (only a page that failed while writing takes the
            // uncommitted ones with it): see ``settleCatchUp()``.
            settleCatchUp()
            throw error
        }
    }

    /// Lowers the store's page cache to ``downloadPageCacheKiB`` when this sync downloads
    /// from revision 0; returns what puts the store's own size back.
    private func downloadCache() throws -> () -> Void {
        guard let kib = downloadPageCacheKiB, store.maxRevision == 0 || store.isRebasing else { return {} }
        let database = store.database
        let own = try database.pageCacheKiB
        guard kib < own else { return {} }
        try database.setPageCacheKiB(kib)
        return { try? database.setPageCacheKiB(own) }
    }

    /// A 409 for another schema, with the lines in which this app's schema and the server's
    /// differ (the server sends its schema's outline with it).
    func explainingSchema(_ error: any Error) -> any Error {
        guard var rejected = error as? SyncRequestRejected, rejected.code == WireError.Code.incompatibleSchema.rawValue,
            let lines = rejected.schema
        else { return error }
        rejected.message += "; " + codec.schema.differences(
            from: lines, lacks: "the server's schema lacks", hasInstead: "the server's schema has instead")
        return rejected
    }

    struct RoundOutcome { var hasMore: Bool; var conflicts: Int; var requestID: String? }

    private func round(
        _ pending: [PendingChange], summary: inout SyncSummary, refused: inout Set<String>, ahead: inout Prefetch?
    ) async throws -> RoundOutcome {
        let asked = try subscriptionRequest()
        var request = SyncRequest(
            maxRevision: store.maxRevision, changeSets: pending.isEmpty ? [] : [Self.changeSet(pending, schema: store.schema)],
            clientID: clientID, requestID: nil, limit: batchSize, protocolVersion: WireProtocol.version,
            schemaVersion: schemaVersion, schemaFingerprint: schemaFingerprint, scopes: try holdings(),
            subscriptions: asked.subscriptions, priority: asked.priority, horizon: try store.downloadHorizon())
        let exchange: Exchange
        // A page asked for ahead is the answer to this very request only if the store stands
        // at the revision and the holdings it was asked with, and asks for the same roots.
        if pending.isEmpty, let page = ahead, page.maxRevision == store.maxRevision, page.scopes == request.scopes,
            page.subscriptions == request.subscriptions, page.priority == request.priority, page.horizon == request.horizon
        {
            ahead = nil
            exchange = try await awaitingNetwork { try await page.task.value }
        } else {
            ahead?.cancel()
            ahead = nil
            if pending.isEmpty && prefetchesPages && request.maxRevision > 0 {
                // Asked as a page asked ahead is: read in pieces while it is applied, and the
                // page after it asked for as soon as its head arrives. Not from revision 0: a
                // new replica learns its scope holdings from the first answer, which would
                // make a page asked on its head with none a request wasted.
                let page = prefetch(after: request.maxRevision, holding: request.scopes, asking: request, follower: nil)
                exchange = try await awaitingNetwork {
                    try await withTaskCancellationHandler { try await page.task.value } onCancel: { page.cancel() }
                }
            } else if pending.isEmpty {
                let (codec, transport, gzip, probe) = (codec, transport, gzip, probe)
                exchange = try await awaitingNetwork { [request] in
                    try await Self.exchange(request, codec: codec, transport: transport, gzip: gzip, probe: probe)
                }
            } else {
                // What the catch-up applied commits before a request with changes is recorded
                // and sent: it answers what the store holds.
                try commitCatchUp()
                // The request id is a digest of what is sent; the bytes are kept as in flight
                // until their answer is applied, so that a retry after a lost answer is the
                // same request under the same id, whatever was edited since, and the server
                // replays its answer instead of creating anything twice.
                let json: [UInt8]
                (json, request.requestID) = probe.measure(.encode) { codec.encode(request, requestIDPrefix: "\(store.maxRevision)-") }
                let wire = gzip ? probe.measure(.gzip) { Gzip.compress(json, level: Gzip.defaultLevel) } : json
                try store.recordInFlight(InFlightRequest(body: wire, gzip: gzip, fingerprint: schemaFingerprint))
                exchange = try await sendInFlight(wire)
            }
        }
        if pending.isEmpty && store.maxRevision != request.maxRevision {
            // The catch-up's transaction was rolled back while this page was on its way (its
            // commit failed): the page does not follow on from the store; ask again.
            exchange.follower?.task.cancel()
            return RoundOutcome(hasMore: true, conflicts: 0, requestID: nil)
        }
        let (conflicts, hasMore) = try absorb(
            exchange, pending: pending, asking: request, summary: &summary, refused: &refused, ahead: &ahead,
            holding: pending.isEmpty)
        return RoundOutcome(hasMore: hasMore, conflicts: conflicts, requestID: request.requestID)
    }

    /// Applies one answer to what `pending` sent (nothing for a catch-up), in one store
    /// transaction that also forgets the request in flight; with `holding` (a catch-up page
    /// of a sync), in the catch-up's transaction, which commits with ``CatchUpCommits``.
    /// A page not read yet (``Exchange/undecoded``) is read in pieces as it is applied,
    /// and the page after it asked for once it is read.
    /// - Returns: How many change sets sent came back as conflicts, and whether the
    ///   response says there is more.
    @discardableResult
    func absorb(
        _ exchange: Exchange, pending: [PendingChange], asking request: SyncRequest? = nil, summary: inout SyncSummary,
        refused: inout Set<String>, ahead: inout Prefetch?, holding: Bool = false
    ) throws -> (conflicts: Int, hasMore: Bool) {
        summary.rounds += 1
        summary.sent += pending.count
        summary.bytesSent += exchange.bytesSent
        summary.bytesReceived += exchange.bytesReceived
        var applier = ResponseApplier(store: store, pending: pending)
        applier.refusedBefore = refused
        applier.hook = applyHook
        applier.probe = probe
        var response = exchange.response
        var applied: ResponseApplier.Outcome?
        if let pieces = exchange.undecoded {
            precondition(pending.isEmpty && holding, "only a catch-up page is read in pieces")
            do {
                (response, applied) = try applyHeld(undecoded: pieces, with: &applier)
            } catch {
                exchange.follower?.task.cancel()
                throw error
            }
        }
        let sentChangeSets = pending.isEmpty ? 0 : 1
        guard response.changeSets.count >= sentChangeSets else {
            throw SyncError(
                .invalidResponse, "the response answers \(response.changeSets.count) change sets; \(sentChangeSets) were sent",
                isRetryable: true)
        }
        // A download from revision 0 goes on under the horizon its first answer names.
        var asking = request
        if let request, request.maxRevision == 0 { asking?.horizon = response.horizon }
        if pending.isEmpty && response.hasMore && prefetchesPages {
            // Asked with what the device holds once this page is applied.
            ahead = prefetch(
                after: response.maxRevision, holding: response.scopes, asking: asking, follower: exchange.follower)
        } else {
            exchange.follower?.task.cancel()
        }
        // One transaction from reading local rows to writing the merged ones: a write with
        // plain SQL from another connection waits, instead of slipping in between and being
        // overwritten.
        let answersFrom = response.changeSets.count - sentChangeSets
        if applied != nil {
            // Read and applied in pieces above.
        } else if holding && pending.isEmpty {
            applied = try applyHeld(response, with: &applier)
        } else {
            try commitCatchUp()
            applied = try probe.measure(.clientApply) {
                try store.transaction(origin: .sync) {
                    let applied = try applier.apply(response, answersFrom: answersFrom)
                    if !pending.isEmpty { try store.clearInFlight() }
                    return applied
                }
            }
            committed()
        }
        if let request {
            try noteDenials(response, asked: request.subscriptions)
            if request.maxRevision == 0 { try store.noteDownloadHorizon(response.horizon) }
        }
        try applyHook?(.committed)
        guard let applied else { preconditionFailure("every branch applies the response") }
        refused.formUnion(applied.refused)
        summary.received += applied.received
        summary.merged += applied.merged
        summary.conflicts += applied.conflicts
        summary.refused += applied.parked
        summary.conflictingChangeSets += applied.conflictingChangeSets
        return (applied.conflictingChangeSets, response.hasMore)
    }

    /// One change set with every pending change, grouped by entity in schema order.
    static func changeSet(_ pending: [PendingChange], schema: Schema) -> ChangeSet {
        var byEntity: [String: EntityChanges] = [:]
        for change in pending {
            // Edited in place: a copy out of the dictionary and back would copy every record.
            func edit(_ body: (inout EntityChanges) -> Void) { body(&byEntity[change.entity, default: EntityChanges(entity: change.entity)]) }
            edit { entry in
                switch change.kind {
                case .create:
                    entry.create.append(change.id)
                    entry.records.append(WireRecord(change.record))
                case .recreate:
                    entry.recreate.append(change.id)
                    entry.records.append(WireRecord(
                        id: change.id, present: change.fields, values: change.record.values, stamps: change.record.stamps,
                        revision: change.revision))
                case .update:
                    entry.update.append(change.id)
                    entry.records.append(WireRecord(
                        id: change.id, present: change.fields, values: change.record.values, stamps: change.record.stamps,
                        revision: change.revision))
                case .delete:
                    entry.delete.append(change.id)
                    entry.records.append(WireRecord(
                        id: change.id, present: FieldMask(), values: change.record.values,
                        stamps: change.record.tombstone.map { ContiguousArray(repeating: $0, count: change.record.values.count) },
                        revision: change.revision))
                }
            }
        }
        return ChangeSet(entities: schema.entities.compactMap { byEntity[$0.name] })
    }
}
