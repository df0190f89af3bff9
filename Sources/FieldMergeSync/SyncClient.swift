import FieldMerge
import FieldMergeProtocol
import FieldMergeSQLite

/// What one ``SyncClient/sync(progress:)`` did.
public struct SyncSummary: Sendable, Equatable {
    /// Requests sent.
    public var rounds = 0
    /// Records sent (creates, updates, deletes).
    public var sent = 0
    /// Records received from the server (catch-up, confirmations, conflict truths).
    public var received = 0
    /// Records merged field by field with local pending changes.
    public var merged = 0
    /// Change sets the server answered as conflicts.
    public var conflictingChangeSets = 0
    /// Field and delete conflicts the merges reported.
    public var conflicts: [FieldConflict] = []
    /// Bytes sent and received on the wire.
    public var bytesSent = 0
    public var bytesReceived = 0

    public init() {}
}

/// The stages of applying one response, where a fault-injection hook may abort.
public enum ApplyStage: String, Sendable, CaseIterable {
    /// The response is decoded; nothing is merged yet.
    case received
    /// Every record is merged; the store transaction has not started.
    case merged
    /// Everything is written inside the store transaction, which has not committed.
    case written
    /// The transaction has committed; the round has not returned yet.
    case committed
}

/// Progress of a sync, for a progress bar.
public struct SyncProgress: Sendable, Equatable {
    public var round: Int
    public var received: Int
    public var sent: Int
    public var hasMore: Bool
}

/// Keeps a ``Store`` in step with a server that speaks the revision protocol.
///
/// ``sync(progress:)`` runs rounds until nothing is left to send and catch-up has no more
/// pages: pending changes → request → transport → response → three-way merge of every
/// record that has local changes → one store transaction. One request is in flight at a
/// time (the actor runs one sync at a time). A failed round changes nothing; the next sync
/// starts over from the store, which is the only state.
public actor SyncClient {
    public let store: Store
    let transport: any SyncTransport
    let codec: WireCodec
    public let clientID: String
    private var refused: Set<String> = []
    /// Gzip request bodies (and accept gzip'd responses).
    public var gzip: Bool
    /// At most this many records per request; catch-up pages use it as `limit` too.
    public var batchSize: Int
    /// Ask for the next catch-up page while applying the current one (a read-only request
    /// that overlaps the server's and the codec's work with the store's). On by default.
    public var prefetchesPages = true
    /// Called at each stage of applying a response; throwing aborts the round there (a
    /// simulated crash). For fault-injection tests and `fieldmerge simulate`; nil in apps.
    private var applyHook: (@Sendable (ApplyStage) throws -> Void)?

    public init(store: sending Store, transport: any SyncTransport, gzip: Bool = true, batchSize: Int = 10_000) {
        self.store = store
        self.transport = transport
        self.gzip = gzip
        self.batchSize = batchSize
        codec = WireCodec(schema: store.schema)
        clientID = String(store.replica.rawValue, radix: 16)
    }

    /// Installs (or removes, with nil) a hook called at each ``ApplyStage`` of every response;
    /// an error it throws aborts the round at that stage, as a crash there would.
    public func setApplyHook(_ hook: (@Sendable (ApplyStage) throws -> Void)?) { applyHook = hook }

    /// Runs `body` with the store (local edits, queries), isolated from syncs in flight.
    public func withStore<T: Sendable>(_ body: (Store) throws -> T) rethrows -> T { try body(store) }

    /// Syncs until the outbox is empty and catch-up is complete.
    ///
    /// - Parameter maxRounds: A bound against a server that never settles (each round that
    ///   makes progress counts).
    public func sync(maxRounds: Int = 1_000, progress: (@Sendable (SyncProgress) -> Void)? = nil) async throws -> SyncSummary {
        var summary = SyncSummary()
        refused = []
        var previous: RoundOutcome?
        var ahead: Prefetch?
        defer { ahead?.task.cancel() }
        while summary.rounds < maxRounds {
            try Task.checkCancellation()
            let pending = try store.pendingChanges(limit: batchSize)
            let outcome = try await round(pending, summary: &summary, ahead: &ahead)
            defer { previous = outcome }
            progress?(SyncProgress(round: summary.rounds, received: summary.received, sent: summary.sent, hasMore: outcome.hasMore))
            // The same request refused twice in a row makes no progress (a create the server
            // will not take): stop, and leave it pending for the app to see.
            if outcome.conflicts > 0, let previous, previous.conflicts > 0, previous.requestID == outcome.requestID { break }
            if pending.isEmpty && !outcome.hasMore { break }
            let settled = try store.pendingChanges(limit: 1).isEmpty
            if !outcome.hasMore && settled { break }
        }
        return summary
    }

    private struct RoundOutcome { var hasMore: Bool; var conflicts: Int; var requestID: String? }

    private func round(_ pending: [PendingChange], summary: inout SyncSummary, ahead: inout Prefetch?) async throws -> RoundOutcome {
        // The request id is a digest of what is sent: a retry after a lost answer, made from
        // the unchanged store, is the same request under the same id, and the server replays
        // its answer instead of creating anything twice.
        var request = SyncRequest(
            maxRevision: store.maxRevision, changeSets: pending.isEmpty ? [] : [Self.changeSet(pending, schema: store.schema)],
            clientID: clientID, requestID: nil, limit: batchSize)
        if !pending.isEmpty {
            request.requestID = "\(store.maxRevision)-" + String(Self.fnv1a(codec.encode(request)), radix: 16)
        }
        let exchange: Exchange
        if pending.isEmpty, let page = ahead, page.maxRevision == store.maxRevision {
            ahead = nil
            exchange = try await page.task.value
        } else {
            ahead?.task.cancel()
            ahead = nil
            exchange = try await Self.exchange(request, codec: codec, transport: transport, gzip: gzip)
        }
        let response = exchange.response
        summary.rounds += 1
        summary.sent += pending.count
        summary.bytesSent += exchange.bytesSent
        summary.bytesReceived += exchange.bytesReceived
        let sentChangeSets = pending.isEmpty ? 0 : 1
        guard response.changeSets.count >= sentChangeSets else {
            throw TransportError("the response answers \(response.changeSets.count) change sets; \(sentChangeSets) were sent")
        }
        if pending.isEmpty && response.hasMore && prefetchesPages { ahead = prefetch(after: response.maxRevision) }
        var applier = ResponseApplier(store: store, pending: pending)
        applier.refusedBefore = refused
        applier.hook = applyHook
        let applied = try applier.apply(response, answersFrom: response.changeSets.count - sentChangeSets)
        try applyHook?(.committed)
        refused.formUnion(applied.refused)
        summary.received += applied.received
        summary.merged += applied.merged
        summary.conflicts += applied.conflicts
        summary.conflictingChangeSets += applied.conflictingChangeSets
        return RoundOutcome(hasMore: response.hasMore, conflicts: applied.conflictingChangeSets, requestID: request.requestID)
    }

    /// FNV-1a, 64 bits.
    static func fnv1a(_ bytes: [UInt8]) -> UInt64 {
        var hash: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in bytes { hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 }
        return hash
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
