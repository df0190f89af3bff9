import FieldMerge
import FieldMergeProtocol

extension RevisionServer {
    /// Merge mode: folds a stale update into the server's record field by field, or returns
    /// nil when the server cannot decide a field without the client's ancestor.
    ///
    /// A field the update carries that nobody changed on the server after the client's base
    /// revision takes the client's value. A field changed on both sides keeps an equal value
    /// under the larger stamp, and otherwise is decided by its strategy as in the core's
    /// two-way merge: lastEditWins by stamp, serverWins, clientWins, max, min, union. A
    /// counter (two increments), a text merge, a custom strategy and an entity's record rule
    /// need the ancestor only the client has, so the change set is answered as a conflict and
    /// the client merges three ways, as in strict mode.
    ///
    /// - Parameters:
    ///   - incoming: The server's record with the update's fields (rewritten, clamped) set.
    ///   - present: The fields the update carries.
    ///   - base: The revision the client's update was made on.
    ///   - row: The server's current record.
    /// - Returns: The merged record and the fields that changed in it.
    func mergeStale(
        _ incoming: Record, present: FieldMask, base: Int64, into row: ServerRow, entity: Entity
    ) -> (record: Record, changed: FieldMask)? {
        var merged = row.record
        var changed = FieldMask()
        var context: MergeContext?
        for index in present {
            let value = incoming.values[index], stamp = incoming.stamps[index]
            guard row.revision(ofField: index) > base else {
                merged.set(index, value, stamp: stamp)
                changed.insert(index)
                continue
            }
            let server = row.record.values[index], serverStamp = row.record.stamps[index]
            let strategy = entity.strategy(at: index)
            if value == server && !strategy.sumsEqualEdits {
                if stamp > serverStamp {
                    merged.set(index, value, stamp: stamp)
                    changed.insert(index)
                }
                continue
            }
            guard entity.recordStrategy == nil, !Self.needsAncestor(strategy) else { return nil }
            let input = FieldMergeInput(
                entity: entity.name, id: row.record.id, field: entity.fields[index], ancestor: nil, ancestorStamp: .none,
                local: value, localStamp: stamp, remote: server, remoteStamp: serverStamp)
            let result = strategy.resolve(input)
            if result == server { continue }
            if context == nil { context = MergeContext(resolutionStamp: clock.now()) }
            merged.set(index, result, stamp: result == value ? stamp : context!.computedStamp(stamp, serverStamp))
            changed.insert(index)
        }
        return (merged, changed)
    }

    /// Strategies that cannot decide without the common ancestor's value.
    static func needsAncestor(_ strategy: FieldStrategy) -> Bool {
        switch strategy {
        case .counter, .text, .custom: return true
        case .lastEditWins, .serverWins, .clientWins, .max, .min, .union: return false
        }
    }
}
