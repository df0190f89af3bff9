import FieldMerge

extension RevisionServer {
    /// How often, at most, a server marks the time of a revision it commits (milliseconds).
    static let markInterval: UInt64 = 60_000

    /// Whether the storage can compact (``CompactingServerStorage``).
    public nonisolated var canCompact: Bool { unsafeStorage is any CompactingServerStorage }

    /// Compacts the tombstones and scope departures of revisions committed more than `age`
    /// milliseconds ago by the server's wall clock (as marked once a minute while it
    /// serves): ``compact(through:batch:dryRun:)`` through the newest revision marked
    /// then. With no such mark, nothing is compacted.
    ///
    /// - Parameters:
    ///   - age: How old, in milliseconds, what goes must be.
    ///   - batch: Tombstones (and departures) removed per write transaction.
    ///   - dryRun: Count what would go, change nothing.
    public func compact(olderThan age: UInt64, batch: Int = 10_000, dryRun: Bool = false) async throws(ServerError) -> CompactionReport {
        let storage = try compacting()
        let cutoff = Int64(clamping: wall.milliseconds()) &- Int64(clamping: age)
        let revision: Int64?
        do {
            revision = try await storage.read { try await storage.revision(markedBy: cutoff) }
        } catch {
            throw Self.serverError(error)
        }
        return try await compact(through: revision ?? 0, batch: batch, dryRun: dryRun)
    }

    /// Removes every tombstone and scope departure at a revision up to `revision` (at most
    /// the data set's), with their log entries, `batch` of each per write transaction so
    /// that requests are answered between batches; then devices that have seen less than
    /// the highest revision removed (and more than nothing) are answered `resetRequired`,
    /// and download the data set again (Specs/reliability.md, "Compaction with a horizon").
    ///
    /// - Parameters:
    ///   - revision: The revision to compact through.
    ///   - batch: Tombstones (and departures) removed per write transaction.
    ///   - dryRun: Count what would go, change nothing.
    /// - Throws: ``ServerError``: ``ServerError/Code/badRequest`` when the storage cannot
    ///   compact; a storage failure stops it between batches, keeping what was done.
    public func compact(through revision: Int64, batch: Int = 10_000, dryRun: Bool = false) async throws(ServerError) -> CompactionReport {
        let storage = try compacting()
        let limit = max(1, batch)
        do {
            let state = try await storage.read { try await storage.state() }
            let through = min(max(0, revision), state.maxRevision)
            if dryRun {
                let counts = try await storage.read { try await storage.compactable(through: through) }
                return CompactionReport(through: through, removed: counts, horizon: state.horizon, batches: 0, dryRun: true)
            }
            var removed = CompactionCounts(), batches = 0
            while true {
                // One batch at a time between requests: a request never waits for more than one.
                await turnstile.enter()
                let step: CompactionCounts
                do {
                    step = try await storage.write { try await storage.compact(through: through, limit: limit) }
                    turnstile.leave()
                } catch {
                    turnstile.leave()
                    throw error
                }
                batches += 1
                removed.add(step)
                if step.tombstones < limit && step.departures < limit { break }
            }
            let after = try await storage.read { try await storage.state() }
            return CompactionReport(through: through, removed: removed, horizon: after.horizon, batches: batches, dryRun: false)
        } catch {
            throw Self.serverError(error)
        }
    }

    private func compacting() throws(ServerError) -> any CompactingServerStorage {
        guard let storage = storage as? any CompactingServerStorage else {
            throw ServerError(.badRequest, "this server's storage (\(type(of: storage))) cannot compact")
        }
        return storage
    }

    /// Marks the time of `revision` when the last mark is a minute old (inside the request's
    /// write transaction, which is committing it).
    func markIfDue(_ revision: Int64) async throws {
        guard let storage = storage as? any CompactingServerStorage else { return }
        let now = wall.milliseconds()
        guard now >= lastMark &+ Self.markInterval || now < lastMark else { return }
        try await storage.markRevision(revision, at: Int64(clamping: now))
        lastMark = now
    }

    /// The deletion a record whose tombstone was compacted stands for: neither alive nor
    /// deleted any more, but given once (below the entity's id bound), in a data set with a
    /// horizon. It is said deleted at the horizon, with no stamp (``Stamp/none``): the
    /// delete's time is no longer known, so an edit made against it wins under
    /// `lastEditWins` as under `editWins` (bringing back a record loses nothing; dropping an
    /// edit would).
    func compactedDeletion(_ entity: ServerEntity, id: Int64) async throws -> Deletion? {
        guard id > 0, let storage = storage as? any CompactingServerStorage else { return nil }
        let horizon = try await storage.state().horizon
        guard horizon > 0, id < (try await storage.idBound(entity)) else { return nil }
        return Deletion(id: id, revision: horizon, tombstone: .none)
    }
}
