import FieldMerge
import FieldMergeProtocol

/// Writes within scopes: a device may create, update and delete only records of roots its
/// user holds, and what it creates or moves must land in one.
extension RevisionServer {
    /// The refusal of a change to a record outside the user's scope: that record alone is
    /// refused (`unauthorized`), the rest of the change set is sent again.
    func outOfScope(_ entity: String, _ id: Int64, sentID: Int64, _ kind: ChangeKind, _ attempt: ChangeSetAttempt) -> ServerRefusal {
        let who = attempt.identity.map { " \($0.user)" } ?? ""
        let verb = kind == .delete ? "deleted" : kind == .create ? "created" : "updated"
        return ServerRefusal.conflict(
            touched: attempt.touched + [(entity, id)],
            refused: [RefusedRecord(
                entity: entity, id: sentID, code: "unauthorized",
                message: "\(entity)#\(id) would be \(verb) outside what the user\(who) may hold (its scope)")])
    }

    /// When a change set ends: records written before their parent toward the root get
    /// their root, then every record it created or updated must lie in a root the user
    /// holds (the grants read again: the change set may have granted it).
    func checkScopes(_ attempt: inout ChangeSetAttempt) async throws {
        guard let plan = scopePlan, !attempt.scopedWrites.isEmpty else { return }
        if !attempt.unrooted.isEmpty {
            let depth = plan.depths
            for (position, id) in attempt.unrooted.sorted(by: { depth[$0.entity] < depth[$1.entity] }) {
                let entity = entities[position]
                guard var row = try await storage.row(entity, id: id) else { continue }
                let old = row.root
                row.root = try await root(of: entity, id: id, values: row.record.values).root
                guard row.root != old else { continue }
                try await storage.write(row, of: entity)
                try await moved(entity, id: id, from: old, to: row.root, &attempt)
            }
        }
        for write in attempt.scopedWrites {
            let entity = entities[write.entity]
            guard let row = try await storage.row(entity, id: write.id), let scope = plan.places[write.entity].scope else { continue }
            // Every write outside the scope is refused (noted; the caller ends the change set).
            if try await !holds(row.root, scope: scope, identity: attempt.identity),
                case .conflict(let touched, let refused) = outOfScope(entity.name, write.id, sentID: write.sentID, write.kind, attempt)
            {
                attempt.touched = touched
                attempt.refused += refused
            }
        }
    }

    /// A record's root changed: it departs from the old one, and the records under it move along.
    func moved(_ entity: ServerEntity, id: Int64, from old: Int64?, to new: Int64?, _ attempt: inout ChangeSetAttempt) async throws {
        // The records under it get new roots: nothing read of them before holds.
        attempt.known.forget()
        if let old { try await scopedStorage.depart(entity, id: id, from: old, revision: attempt.revision) }
        try await reroot(entity, id: id, from: old, to: new, &attempt)
    }

    /// The records a change set's answer must keep whatever their scope: those the client
    /// sent, by their permanent ids ("entity#id").
    static func sentKeys(_ changeSet: ChangeSet, _ attempt: ChangeSetAttempt) -> Set<String> {
        var keys: Set<String> = []
        for changes in changeSet.entities {
            for id in changes.create + changes.update + changes.delete + changes.recreate {
                keys.insert("\(changes.entity)#\(attempt.resolve(changes.entity, id))")
            }
        }
        return keys
    }
}

extension ScopePlan {
    /// Each entity's depth below its scope's root (0 for roots and unscoped entities).
    var depths: [Int] {
        places.indices.map { position in
            var depth = 0, current = position
            while case .member(_, _, let parent) = places[current] {
                depth += 1
                current = parent
            }
            return depth
        }
    }
}

extension RootSet {
    /// The set with `root` added.
    func adding(_ root: Int64) -> RootSet {
        switch self {
        case .all: return .all
        case .some(let ids): return .ids(ids + [root])
        }
    }
}
