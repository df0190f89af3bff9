import FieldMerge
import FieldMergeProtocol

extension RevisionServer {
    /// Answers one request: first what the client missed since its `maxRevision` (one change
    /// set, at most `limit` records, ending on a revision boundary, `hasMore` when cut), then
    /// one change set per change set it sent, in order, confirmed or marked as a conflict with
    /// the server's truth.
    ///
    /// A request with change sets whose `clientID` and `requestID` equal that client's
    /// previous such request is a retry whose answer was lost: it gets the same answer again
    /// and changes nothing. The whole request is one write transaction (each change set a
    /// savepoint in it), so a crash never leaves change sets committed without the answer
    /// that a retry would need. A request without change sets only reads.
    ///
    /// - Parameters:
    ///   - request: The decoded request.
    ///   - identity: Who sent it, as the transport authenticated it: passed to
    ///     ``Options/authorize``, and the stored reply belongs to it.
    /// - Throws: ``ServerError``; the server has then changed nothing.
    public func handle(_ request: SyncRequest, identity: SyncIdentity? = nil) async throws(ServerError) -> SyncResponse {
        try await handleReporting(request, identity: identity).response
    }

    /// ``handle(_:identity:)``, with the server's revision before and after the request, and
    /// whether it was answered with a stored reply.
    package func handleReporting(_ request: SyncRequest, identity: SyncIdentity? = nil) async throws(ServerError) -> SyncExchange.Handled {
        // One request at a time, also where the storage suspends (a database over the
        // network); a request that only reads runs beside the others when the storage keeps
        // each transaction apart: it changes nothing of the server's own.
        let beside = request.changeSets.isEmpty && storage.readsConcurrently && (scopePlan == nil || rootsReady)
        // A write on a storage that groups them waits for its group's turn instead
        // (RevisionServer+WriteGroups.swift).
        let grouped = !request.changeSets.isEmpty && storage.groupsWrites && options.writeGroup > 1 && (scopePlan == nil || rootsReady)
        if !beside && !grouped { await turnstile.enter() }
        defer { if !beside && !grouped { turnstile.leave() } }
        var before = maxRevision
        if scopePlan != nil && !rootsReady {
            do { try await prepareRoots() } catch { throw Self.serverError(error) }
        }
        // A client of an older schema version: its change sets in the current schema, the
        // answer in its own (the stored reply stays in the current schema).
        let version = codec.version(fingerprint: request.schemaFingerprint)
        var lifted = request
        if let version { lifted.changeSets = version.lift(request.changeSets) }
        var (response, replayed, span) = try await answer(lifted, sent: request.changeSets, identity: identity, grouped: grouped)
        if let readable = options.readable { response = Self.readableOnly(response, by: identity, readable) }
        // Committed: the live subscribers hear of it (the hub reads on a task of its own). A
        // read beside a write in progress leaves that to the write, which may not have committed.
        var after = beside ? before : maxRevision
        if let span { (before, after) = span }
        if after > before { live.advance(to: after) }
        var handled = SyncExchange.Handled(
            response: version.map { $0.project(response) } ?? response, revisionBefore: before, revisionAfter: after,
            replayed: replayed)
        handled.answering = version?.codec ?? codec
        return handled
    }

    /// `response` without the records of entities `identity` may not read (the change sets
    /// stay, so answers still line up with what was sent; refusals stay too: they name only
    /// records the client sent, so that it keeps them aside instead of sending them forever).
    static func readableOnly(_ response: SyncResponse, by identity: SyncIdentity?, _ readable: ReadFilter) -> SyncResponse {
        var filtered = response
        filtered.changeSets = response.changeSets.map { changeSet in
            var kept = changeSet
            kept.entities = changeSet.entities.filter { readable(identity, $0.entity) }
            return kept
        }
        return filtered
    }

    /// `sent`: the change sets as the client sent them (before an older schema version's were
    /// lifted), whose digest is kept with the reply: the same across an upgrade of the server.
    /// With whether the answer is a stored reply (``SyncExchange/Handled/replayed``).
    /// `grouped`: the write joins a group transaction (``Options/writeGroup``), and the
    /// answer says the revisions before and after it (its group's, when it ran in one).
    private func answer(
        _ request: SyncRequest, sent: [ChangeSet], identity: SyncIdentity?, grouped: Bool
    ) async throws(ServerError) -> (SyncResponse, replayed: Bool, span: (Int64, Int64)?) {
        if let version = request.protocolVersion, version != WireProtocol.version {
            throw ServerError(
                .unsupportedProtocolVersion,
                "the request speaks protocol version \(version); this server speaks \(WireProtocol.version)")
        }
        try Self.validate(request)
        try Self.validateAttachments(request, schema: schema)
        do {
            guard !request.changeSets.isEmpty else {
                let response = try await storage.read { () async throws -> SyncResponse in
                    try await respond(request, identity: identity, replyKey: nil)
                }
                return (response, false, nil)
            }
            try Self.validateReplyKey(request, identity: identity)
            // The stored reply belongs to the authenticated user's client, not to whatever
            // client id a peer sends. The user's length comes first so that no other pair of
            // user and client id ("ann/x" and "y", "ann" and "x/y") makes the same key.
            let owner = identity.map { "\($0.user.utf8.count):\($0.user)" } ?? ""
            let write = QueuedWrite(
                request: request, sent: sent, identity: identity, owner: owner,
                replyKey: request.clientID.map { client in identity == nil ? client : "\(owner)/\(client)" },
                missing: try await attachmentsNotHeld(by: request))
            if grouped {
                let answered = try await inWriteGroup(write)
                return (answered.response, answered.replayed, (answered.before, answered.after))
            }
            missingAttachments = write.missing
            let (response, replayed) = try await storage.write(reserving: reservation(for: [write])) { () async throws -> (SyncResponse, replayed: Bool) in
                try await writeAnswer(write)
            }
            return (response, replayed, nil)
        } catch {
            throw Self.serverError(error)
        }
    }

    /// The answer to a request with change sets, inside a write transaction: its stored
    /// reply when it is a retry, else ``respond(_:identity:replyKey:owner:sent:)``.
    func writeAnswer(_ write: QueuedWrite) async throws -> (SyncResponse, replayed: Bool) {
        let request = write.request
        if let replyKey = write.replyKey, let id = request.requestID, let stored = try await storedReply(replyKey, id, of: request) {
            if let digest = stored.digest, digest != RequestDigest(write.sent).value {
                throw ServerError(
                    .idempotencyMismatch,
                    "request \(id) of client \(request.clientID ?? "") was taken before with other change sets: "
                        + "a retry must send the same changes; new changes need a new requestID")
            }
            return (try await replay(stored.response, of: request, identity: write.identity), true)
        }
        return (try await respond(request, identity: write.identity, replyKey: write.replyKey, owner: write.owner, sent: write.sent), false)
    }

    /// The stored reply `id` of `client`. The storage is told the catch-up the request reads
    /// next when it is not a retry: the page after the device's revision, when the data set
    /// has anything after it and the server has no scopes (whose catch-up reads otherwise).
    private func storedReply(_ client: String, _ id: String, of request: SyncRequest) async throws -> StoredReplyRow? {
        let latest = try await storage.state().readable
        guard scopePlan == nil, request.maxRevision < latest else { return try await storage.reply(client: client, request: id) }
        let window = CatchUpWindow(after: request.maxRevision, limit: max(1, request.limit ?? options.defaultPageLimit), latest: latest)
        return try await storage.reply(client: client, request: id, before: window)
    }

    /// The answer, inside the request's transaction. A request that changed nothing (no
    /// change sets, each refused, a conflict or empty) writes nothing: no state, no reply
    /// (its retry is answered anew, the same way, since nothing moved for it).
    private func respond(
        _ request: SyncRequest, identity: SyncIdentity?, replyKey: String?, owner: String = "", sent: [ChangeSet] = []
    ) async throws -> SyncResponse {
        let state = try await storage.state()
        // A device never sees a revision that did not commit, so one ahead of the data set
        // saw another data set (this one restored from a backup, or replaced).
        guard request.maxRevision <= state.maxRevision else {
            throw ServerError(
                .revisionAhead,
                "this device has seen revision \(request.maxRevision), but the data set stands at revision \(state.maxRevision): "
                    + "it was restored from a backup or replaced since; reset the replica to sync again")
        }
        // A device that has seen something, but less than the horizon, may have missed a
        // delete whose tombstone compaction removed: only a fresh download is safe.
        // A download that began under the current horizon is safe at any revision: no record
        // it holds can have had its delete compacted.
        guard !Self.isBehind(request, horizon: state.horizon) else {
            throw ServerError(
                .resetRequired,
                "this device has seen revision \(request.maxRevision), but deletes up to revision \(state.horizon) were compacted: "
                    + "download the data set again (the client does, and keeps its unsynced changes)")
        }
        // (A read leaves the clock alone: it may run beside a write, whose clock it is.)
        if !request.changeSets.isEmpty { clock = HybridClock(replica: replica, last: state.clock, maxDrift: options.maxDrift, wall: wall) }
        var revision = state.maxRevision
        // Below what may still be in flight (a storage whose writes commit in any order), the
        // catch-up stops there, and so does the revision the answer gives the device.
        let readable = state.readable
        let limit = max(1, request.limit ?? options.defaultPageLimit)
        let probe = options.probe
        let view = try await scopeView(request, identity: identity)
        let page = try await probe.measure(.catchUp) {
            try await catchUp(after: request.maxRevision, through: readable, limit: limit, view: view)
        }
        var answers: [ChangeSet] = []
        var idMap: [String: [Int64: Int64]] = [:]
        var holding = view.map { Self.held(after: page, view: $0) }
        if !request.changeSets.isEmpty {
            try await probe.measure(.serverApply) {
                for changeSet in request.changeSets {
                    answers.append(try await apply(changeSet, identity: identity, revision: &revision, idMap: &idMap, holding: &holding))
                }
            }
        }
        let response = SyncResponse(
            maxRevision: page.hasMore ? page.end : readable < state.maxRevision ? readable : revision,
            changeSets: (page.changeSet.map { [$0] } ?? []) + answers,
            hasMore: page.hasMore, scopes: holding.flatMap(holdings), deniedSubscriptions: view?.denied,
            horizon: state.horizon > 0 ? state.horizon : nil)
        if revision != state.maxRevision {
            try await probe.measure(.replyStorage) {
                try await storage.saveState(ServerState(maxRevision: revision, clock: clock.last, horizon: state.horizon))
                try await markIfDue(revision)
                if let replyKey, let id = request.requestID {
                    // Only the answers are kept (bounded by what the client sent); a replay
                    // reads the catch-up part again, up to where this one ended.
                    let reply = StoredReply(
                        pageEnd: page.hasMore ? page.end : readable,
                        answers: SyncResponse(maxRevision: response.maxRevision, changeSets: answers, hasMore: page.hasMore))
                    try await keep(reply, key: replyKey, owner: owner, digest: RequestDigest(sent).value, id: id)
                }
            }
        }
        // A read beside a write may have read the data set before the write's revision: it
        // only ever moves the revision on (another process's commit). Otherwise the request
        // had the turn, and the data set's revision is what it read or wrote (an import by
        // another process may have moved it back).
        maxRevision = request.changeSets.isEmpty && storage.readsConcurrently ? max(maxRevision, revision) : revision
        return response
    }

    /// Stores `reply` with the digest of the request's change sets and the time, then prunes
    /// the replies older than ``Options/replyRetention`` and `owner`'s beyond
    /// ``Options/repliesPerUser``.
    private func keep(_ reply: StoredReply, key: String, owner: String, digest: UInt64, id: String) async throws {
        let now = Int64(clamping: wall.milliseconds())
        try await storage.storeReply(
            ReplyToStore(client: key, owner: owner, request: id, digest: digest, storedAt: now, response: reply.encoded(replyCodec)),
            pruning: ReplyPruning(
                storedBefore: now &- Int64(clamping: options.replyRetention), owner: owner, keeping: options.repliesPerUser,
                client: key))
    }

    /// The answer to a retry whose answer was lost: the catch-up part read again up to where
    /// the first answer's ended (records changed since then come in a later catch-up), and
    /// the stored answers to its change sets.
    private func replay(_ stored: [UInt8], of request: SyncRequest, identity: SyncIdentity?) async throws -> SyncResponse {
        let reply = try StoredReply(decoding: stored, replyCodec)
        let state = try await storage.state()
        if Self.isBehind(request, horizon: state.horizon) {
            // Its catch-up part cannot be read again (deletes it would name were compacted):
            // the stored answers alone, at the device's own revision, so that its creates get
            // their ids once; its next request is refused `resetRequired`, and it rebases.
            return SyncResponse(
                maxRevision: request.maxRevision, changeSets: reply.answers.changeSets, hasMore: true, scopes: request.scopes,
                horizon: state.horizon)
        }
        let limit = max(1, request.limit ?? options.defaultPageLimit)
        let view = try await scopeView(request, identity: identity)
        let page = try await catchUp(after: request.maxRevision, through: reply.pageEnd, limit: limit, view: view)
        let horizon = state.horizon
        return SyncResponse(
            maxRevision: reply.answers.maxRevision, changeSets: (page.changeSet.map { [$0] } ?? []) + reply.answers.changeSets,
            hasMore: reply.answers.hasMore || page.deferred.contains { !$0.isEmpty }, scopes: view.flatMap { holdings(Self.held(after: page, view: $0)) },
            deniedSubscriptions: view?.denied, horizon: horizon > 0 ? horizon : nil)
    }

    /// Whether `request` comes from a device that may have missed a compacted delete: it has
    /// seen something, less than the horizon, and its download did not begin under it.
    static func isBehind(_ request: SyncRequest, horizon: Int64) -> Bool {
        request.maxRevision > 0 && request.maxRevision < horizon && (request.horizon ?? 0) < horizon
    }

    /// What the caller of ``handle(_:identity:)`` sees of an error inside it.
    static func serverError(_ error: any Error) -> ServerError {
        switch error {
        case let error as ServerError: return error
        case ServerRefusal.unknownEntity(let entity): return ServerError(.badRequest, "unknown entity '\(entity)'")
        case ServerRefusal.invalid(let message): return ServerError(.badRequest, message)
        case let error as WireError: return ServerError(.corrupt, "a stored reply cannot be read: \(error)", cause: error)
        default: return ServerError.wrapping(error)
        }
    }

    // MARK: Catch-up

    struct Page {
        var changeSet: ChangeSet?
        var end: Int64
        var hasMore: Bool
        /// By scope, gained roots left for a later page (Specs/scopes.md §6).
        var deferred: [Set<Int64>] = []
    }

    /// The records changed after `revision` up to `latest`, read from the log in revision
    /// order: at most `limit`, ending on a revision boundary (a revision larger than `limit`
    /// comes whole). `hasMore` says whether the log holds anything after the page's end (a
    /// replay reads up to an older `latest`, and its page needs the parents of later changes too).
    func catchUp(after revision: Int64, through latest: Int64, limit: Int, view: ScopeView? = nil) async throws -> Page {
        if let view { return try await scopedCatchUp(after: revision, through: latest, limit: limit, view: view) }
        // A device already at the data set's revision (a live device that writes, say): the
        // log has nothing for it, and the storage is not asked.
        guard revision < latest else { return Page(changeSet: nil, end: revision, hasMore: false) }
        let bounds = try await storage.logBounds(after: revision, limit: limit, latest: latest)
        guard let first = bounds.first, first <= latest else {
            return Page(changeSet: nil, end: revision, hasMore: false)
        }
        var end = latest
        var hasMore = bounds.afterLatest != nil
        if let cut = bounds.cut, cut <= latest {
            // Row limit + 1 exists: end before its revision, or take that revision whole
            // when it is the only one in the page.
            let last = bounds.last ?? cut
            end = last < cut ? last : (first < cut ? cut - 1 : cut)
            hasMore = end < cut ? true : try await storage.logRevision(after: end, offset: 0) != nil
        }
        var changed: [EntityChanges] = []
        for entity in entities {
            var changes = EntityChanges(entity: entity.name)
            var (alive, deleted) = try await storage.changes(entity, after: revision, through: end)
            changes.records.reserveCapacity(alive.count + deleted.count)
            // Moved out one by one (reversed, then taken from the end): a copy of each row
            // would retain and release its arrays once more.
            // (Through the buffer: Array's own `reverse()` copies each row as it swaps.)
            alive.withUnsafeMutableBufferPointer { $0.reverse() }
            while let row = alive.popLast() {
                if row.created > revision { changes.create.append(row.record.id) } else { changes.update.append(row.record.id) }
                changes.records.append(wireRecord(row, entity: entity))
            }
            for deletion in deleted {
                changes.delete.append(deletion.id)
                changes.records.append(deletedRecord(deletion, entity: entity))
            }
            if !changes.records.isEmpty { changed.append(changes) }
        }
        if hasMore { try await includeParents(of: &changed, after: revision, end: end) }
        return Page(changeSet: ChangeSet(entities: changed, conflict: nil), end: end, hasMore: hasMore)
    }

    func wireRecord(_ row: ServerRow, entity: ServerEntity, oldID: Int64? = nil) -> WireRecord {
        WireRecord(
            id: row.record.id, present: entity.entity.allFields, values: row.record.values, stamps: row.record.stamps,
            revision: row.revision, oldID: oldID)
    }

    /// A deleted record on the wire: no attributes, its revision, and the tombstone's stamp
    /// as every field's stamp (which travels once, under `"*"`).
    func deletedRecord(_ deletion: Deletion, entity: ServerEntity) -> WireRecord {
        let count = entity.entity.fields.count
        return WireRecord(
            id: deletion.id, present: FieldMask(), values: ContiguousArray(repeating: .null, count: count),
            stamps: ContiguousArray(repeating: deletion.tombstone, count: count), revision: deletion.revision, oldID: nil)
    }
}
