import FieldMerge
import FieldMergeProtocol

extension RevisionServer {
    /// A catch-up page for a device of a server with scopes: bounded by what this device
    /// receives, not by the whole log. The revisions of its records changed after `revision`
    /// (under the roots it keeps, and of unscoped entities) are counted, at most `limit + 1`
    /// per entity; past `limit`, the page ends before the revision of the `limit + 1`-th
    /// (or takes that revision whole when it is the first). Gained and lost roots come whole
    /// in the page.
    func scopedCatchUp(after revision: Int64, through latest: Int64, limit: Int, view: ScopeView) async throws -> Page {
        guard let plan = scopePlan else { return Page(changeSet: nil, end: revision, hasMore: false) }
        let storage = scopedStorage
        var revisions: [Int64] = []
        for entity in entities {
            let kept: RootFilter = plan.places[entity.position].scope.map { view.granted[$0].intersection(view.held[$0]) } ?? .every
            revisions += try await storage.revisions(entity, roots: kept, after: revision, limit: limit + 1)
        }
        revisions.sort()
        let window = revisions.prefix { $0 <= latest }
        var end = latest, hasMore = window.count < revisions.count
        if window.count > limit {
            let first = window[0], last = window[limit - 1], cut = window[limit]
            end = last < cut ? last : (first < cut ? cut - 1 : cut)
            hasMore = true
        }
        let deferred = try await deferredGains(view, through: end, limit: limit)
        if deferred.contains(where: { !$0.isEmpty }) { hasMore = true }
        var changed: [EntityChanges] = []
        for entity in entities {
            let changes: EntityChanges
            if let scope = plan.places[entity.position].scope {
                changes = try await scopedChanges(entity, scope: scope, view: view, after: revision, end: end, deferring: deferred[scope])
            } else {
                changes = try await unscopedChanges(entity, after: revision, end: end)
            }
            if !changes.records.isEmpty || !changes.leave.isEmpty { changed.append(changes) }
        }
        if hasMore { try await includeParents(of: &changed, after: revision, end: end) }
        return Page(
            changeSet: changed.isEmpty ? nil : ChangeSet(entities: changed, conflict: nil), end: end, hasMore: hasMore, deferred: deferred)
    }

    /// By scope, the roots the device gains that wait for a later page: none when the
    /// records of every gained root (up to `end`) fit in `limit`; else whole roots are taken,
    /// those of the request's `SyncRequest/priority` first and then by scope and id, until
    /// the next would pass `limit` (one at least), and the rest wait. Gains of every root
    /// (`"*"`) are never split.
    func deferredGains(_ view: ScopeView, through end: Int64, limit: Int) async throws -> [Set<Int64>] {
        guard let plan = scopePlan else { return [] }
        var candidates: [(first: Bool, scope: Int, root: Int64, size: Int)] = []
        for (number, scope) in plan.scopes.enumerated() {
            guard case .only(let gained) = view.granted[number].subtracting(view.held[number]), !gained.isEmpty else { continue }
            var sizes: [Int64: Int] = [:]
            for position in scope.entities {
                for (root, size) in try await scopedStorage.rootSizes(entities[position], roots: gained, through: end) {
                    sizes[root, default: 0] += size
                }
            }
            let first = view.priority.indices.contains(number) ? view.priority[number] : []
            for root in gained { candidates.append((first.contains(root), number, root, sizes[root] ?? 0)) }
        }
        var deferred = [Set<Int64>](repeating: [], count: plan.scopes.count)
        guard candidates.reduce(0, { $0 + $1.size }) > limit else { return deferred }
        candidates.sort { ($0.first ? 0 : 1, $0.scope, $0.root) < ($1.first ? 0 : 1, $1.scope, $1.root) }
        var taken = 0, full = false
        for (index, candidate) in candidates.enumerated() {
            if !full, index == 0 || taken + candidate.size <= limit {
                taken += candidate.size
            } else {
                full = true
                deferred[candidate.scope].insert(candidate.root)
            }
        }
        return deferred
    }

    /// One unscoped entity's changes after `revision` up to `end`.
    private func unscopedChanges(_ entity: ServerEntity, after revision: Int64, end: Int64) async throws -> EntityChanges {
        var changes = EntityChanges(entity: entity.name)
        let (alive, deleted) = try await scopedStorage.changes(entity, roots: .every, after: revision, through: end)
        for row in alive {
            if row.created > revision { changes.create.append(row.record.id) } else { changes.update.append(row.record.id) }
            changes.records.append(wireRecord(row, entity: entity))
        }
        for deletion in deleted {
            changes.delete.append(deletion.id)
            changes.records.append(deletedRecord(deletion, entity: entity))
        }
        return changes
    }

    /// One scoped entity's part of a catch-up page after `revision` up to `end`, for a device
    /// that holds `held` and may hold `granted` of the entity's scope:
    /// - what changed in the roots it keeps (alive and deleted), as today;
    /// - every record of the roots it gains, at revisions up to `end`, as created (backfill:
    ///   however old they are; newer ones come with later pages);
    /// - `leave` for the records of the roots it loses, and for records that moved out of a
    ///   root it held to one it may not hold.
    func scopedChanges(
        _ entity: ServerEntity, scope: Int, view: ScopeView, after revision: Int64, end: Int64, deferring deferred: Set<Int64> = []
    ) async throws -> EntityChanges {
        let storage = scopedStorage
        let granted = view.granted[scope], held = view.held[scope]
        var changes = EntityChanges(entity: entity.name)
        var sent: Set<Int64> = []
        let kept = granted.intersection(held)
        var (alive, deleted) = kept == .every
            ? try await storage.changes(entity, after: revision, through: end)
            : try await storage.changes(entity, roots: kept, after: revision, through: end)
        var gaining = granted.subtracting(held)
        if !deferred.isEmpty, case .only(let ids) = gaining { gaining = .only(ids.filter { !deferred.contains($0) }) }
        let gained = try await storage.records(entity, roots: gaining, through: end)
        changes.records.reserveCapacity(alive.count + deleted.count + gained.count)
        alive.reverse()
        while let row = alive.popLast() {
            if row.created > revision { changes.create.append(row.record.id) } else { changes.update.append(row.record.id) }
            sent.insert(row.record.id)
            changes.records.append(wireRecord(row, entity: entity))
        }
        for row in gained {
            changes.create.append(row.record.id)
            sent.insert(row.record.id)
            changes.records.append(wireRecord(row, entity: entity))
        }
        for deletion in deleted {
            changes.delete.append(deletion.id)
            sent.insert(deletion.id)
            changes.records.append(deletedRecord(deletion, entity: entity))
        }
        // Leaving: everything under the roots it loses, and what moved away from a root it
        // holds unless it moved to one it may hold (then it came above).
        let lost = held.subtracting(granted)
        var leaving = Set(try await storage.ids(entity, roots: lost))
        // Records of lost roots deleted since: the device may hold them still.
        leaving.formUnion(try await storage.changes(entity, roots: lost, after: revision, through: end).deleted.map(\.id))
        for id in try await storage.departures(entity, roots: held.intersection(.all), after: revision, through: end) where !sent.contains(id) {
            // Gone since (deleted under a root it moved to): the device must drop it too.
            guard let row = try await storage.row(entity, id: id) else {
                leaving.insert(id)
                continue
            }
            if !granted.contains(row.root) { leaving.insert(id) }
        }
        changes.leave = leaving.subtracting(sent).sorted()
        return changes
    }

    /// Leaves out of `changeSet` the records of scoped entities whose root the user does not
    /// hold (`holding`), except those in `keep` (the records the client sent, which it has):
    /// what a cascade or a conflict's truth reached beyond the user's scope.
    func withinScope(_ changeSet: ChangeSet, holding: [RootSet], keep: Set<String> = []) async throws -> ChangeSet {
        guard let plan = scopePlan else { return changeSet }
        var result = changeSet
        var emptied: Set<Int> = []
        for (index, changes) in changeSet.entities.enumerated() {
            guard let position = positions[changes.entity], let scope = plan.places[position].scope else { continue }
            let entity = entities[position]
            var dropped: Set<Int64> = []
            for record in changes.records where !keep.contains("\(changes.entity)#\(record.id)") {
                let root: Int64?
                if let row = try await storage.row(entity, id: record.id) {
                    root = row.root
                } else {
                    root = try await storage.deletion(entity, id: record.id)?.root
                }
                if !holding[scope].contains(root) { dropped.insert(record.id) }
            }
            guard !dropped.isEmpty else { continue }
            var filtered = changes
            filtered.records.removeAll { dropped.contains($0.id) }
            filtered.create.removeAll { dropped.contains($0) }
            filtered.update.removeAll { dropped.contains($0) }
            filtered.delete.removeAll { dropped.contains($0) }
            result.entities[index] = filtered
            if filtered.records.isEmpty { emptied.insert(index) }
        }
        result.entities = result.entities.enumerated().filter { !emptied.contains($0.offset) }.map(\.element)
        return result
    }
}
