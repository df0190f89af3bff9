/// Three-way merges of records, one at a time or in batches (see ``mergeBatch(_:ancestors:local:remote:ancestorPresent:context:)``).
public enum ThreeWayMerge {
    /// Merges one record three ways, field by field.
    ///
    /// A field changed on one side only takes that side's value; a field changed on both
    /// sides to the same value keeps it with the larger stamp; a field changed on both sides
    /// to different values is a conflict, decided by the field's ``FieldStrategy`` and
    /// reported. "Changed" means the stamp differs from the ancestor's; where a stamp is
    /// missing (``Stamp/none``) values are compared instead. Without an ancestor the merge
    /// is two-way: equal values stay, different values are conflicts.
    ///
    /// - Parameters:
    ///   - entity: The records' entity, with its strategies and delete policy.
    ///   - ancestor: The last version the server acknowledged, or `nil`.
    ///   - local: This replica's version.
    ///   - remote: The server's current version.
    ///   - context: The stamp for computed values.
    /// - Returns: The merged record, what to upload, what to write locally, the conflicts.
    /// - Throws: ``MergeError/shapeMismatch(entity:id:expected:values:stamps:)`` or
    ///   ``MergeError/idMismatch(entity:ancestor:local:remote:)`` for records that do not
    ///   fit together.
    /// - Complexity: O(*n*) in the number of fields, plus what the strategies cost.
    public static func merge(
        _ entity: Entity, ancestor: Record?, local: Record, remote: Record,
        context: MergeContext = MergeContext()
    ) throws(MergeError) -> MergeResult {
        let count = entity.fields.count
        for record in [ancestor, local, remote] {
            guard let record else { continue }
            guard record.values.count == count, record.stamps.count == count else {
                throw .shapeMismatch(
                    entity: entity.name, id: record.id, expected: count,
                    values: record.values.count, stamps: record.stamps.count)
            }
        }
        guard local.id == remote.id, ancestor == nil || ancestor?.id == local.id else {
            throw .idMismatch(entity: entity.name, ancestor: ancestor?.id, local: local.id, remote: remote.id)
        }
        var merger = RecordMerger(entity: entity, context: context)
        return try merger.merge(ancestor: ancestor, local: local, remote: remote)
    }
}

/// The merge of one record; shared by the single and the batch API.
struct RecordMerger {
    let entity: Entity
    let context: MergeContext
    var conflicts: [FieldConflict] = []

    init(entity: Entity, context: MergeContext) {
        self.entity = entity
        self.context = context
    }

    mutating func merge(ancestor: Record?, local: Record, remote: Record) throws(MergeError) -> MergeResult {
        // A deleted ancestor is no base for field changes: a side that is alive re-created it.
        let base = ancestor?.isDeleted == true ? nil : ancestor
        let merged: Record
        switch (local.tombstone, remote.tombstone) {
        case let (l?, r?):
            // Deleted on both sides: the later delete stands (its record, for symmetry).
            merged = l > r ? local : remote
        case (nil, nil):
            merged = try mergeFields(base: base, local: local, remote: remote)
        case (let l?, nil):
            merged = resolveDelete(deleted: local, tombstone: l, deletedIsLocal: true, ancestor: ancestor, edited: remote)
        case (nil, let r?):
            merged = resolveDelete(deleted: remote, tombstone: r, deletedIsLocal: false, ancestor: ancestor, edited: local)
        }
        return finish(merged, local: local, remote: remote)
    }

    /// Whether side `x` changed field `index` relative to `base`.
    @inline(__always)
    static func changed(_ x: Record, _ base: Record, _ index: Int) -> Bool {
        let xs = x.stamps[index], bs = base.stamps[index]
        if xs.isNone || bs.isNone { return x.values[index] != base.values[index] }
        return xs != bs
    }

    // MARK: Fields

    private mutating func mergeFields(base: Record?, local: Record, remote: Record) throws(MergeError) -> Record {
        var merged = local
        var localChanged = false, remoteChanged = false
        for index in 0..<entity.fields.count {
            let lc = base.map { Self.changed(local, $0, index) } ?? true
            let rc = base.map { Self.changed(remote, $0, index) } ?? true
            localChanged = localChanged || lc
            remoteChanged = remoteChanged || rc
            switch (lc, rc) {
            case (_, false):
                continue  // local's value: changed locally, or unchanged on both sides
            case (false, true):
                merged.values[index] = remote.values[index]
                merged.stamps[index] = remote.stamps[index]
            case (true, true) where isOwnEarlierEdit(remote.stamps[index], local.stamps[index]):
                continue  // the remote value is this replica's own earlier edit: local builds on it
            case (true, true):
                if local.values[index] == remote.values[index]
                    && !(entity.strategy(at: index).sumsEqualEdits && local.stamps[index] != remote.stamps[index])
                {
                    merged.stamps[index] = max(local.stamps[index], remote.stamps[index])
                } else {
                    let (value, stamp) = decide(index, base: base, local: local, remote: remote)
                    merged.values[index] = value
                    merged.stamps[index] = stamp
                }
            }
        }
        if let rule = entity.recordStrategy, localChanged, remoteChanged {
            try applyRecordRule(rule, to: &merged, base: base, local: local, remote: remote)
        }
        return merged
    }

    /// Whether a remote field stamp is this replica's own edit, no newer than its local one.
    ///
    /// The merging replica is the one of ``MergeContext/resolutionStamp`` (none: no such rule).
    /// A replica's edits are sequential and each builds on the last, so a server value still
    /// carrying this replica's stamp `r` is an edit the local value (stamped `l ≥ r`, by this
    /// replica or by a merge here) already contains: a counter would otherwise count it twice
    /// when an answer was lost and the field was edited again before the retry.
    @inline(__always)
    private func isOwnEarlierEdit(_ remote: Stamp, _ local: Stamp) -> Bool {
        let own = context.resolutionStamp
        return !own.isNone && !remote.isNone && remote.replica == own.replica && remote <= local
    }

    /// Decides a field that both sides changed to different values (or, for a counter, two
    /// distinct edits to one value), and reports it.
    private mutating func decide(_ index: Int, base: Record?, local: Record, remote: Record) -> (Value, Stamp) {
        let field = entity.fields[index]
        let strategy = entity.strategy(at: index)
        let input = FieldMergeInput(
            entity: entity.name, id: local.id, field: field,
            ancestor: base?.values[index], ancestorStamp: base?.stamps[index] ?? .none,
            local: local.values[index], localStamp: local.stamps[index],
            remote: remote.values[index], remoteStamp: remote.stamps[index])
        let (value, fallback) = strategy.decide(input)
        let winner: MergeWinner
        let stamp: Stamp
        let isLocal = value == input.local, isRemote = value == input.remote
        if isLocal && isRemote {
            // Both sides hold the answer (a counter of two equal edits that cancel out).
            let localNewer = input.localStamp > input.remoteStamp
            (winner, stamp) = localNewer ? (.local, input.localStamp) : (.remote, input.remoteStamp)
        } else if isLocal {
            (winner, stamp) = (.local, input.localStamp)
        } else if isRemote {
            (winner, stamp) = (.remote, input.remoteStamp)
        } else {
            (winner, stamp) = (.merged, context.computedStamp(input.localStamp, input.remoteStamp))
        }
        conflicts.append(FieldConflict(
            entity: entity.name, id: local.id, kind: .field, field: field.name, fieldIndex: index,
            ancestor: input.ancestor, ancestorStamp: base == nil ? nil : input.ancestorStamp,
            local: input.local, localStamp: input.localStamp, remote: input.remote,
            remoteStamp: input.remoteStamp, strategy: strategy.name, winner: winner, result: value,
            fallback: fallback))
        return (value, stamp)
    }

    private mutating func applyRecordRule(
        _ rule: any RecordMergeStrategy, to merged: inout Record, base: Record?, local: Record, remote: Record
    ) throws(MergeError) {
        let input = RecordMergeInput(
            entity: entity, ancestor: base, local: local, remote: remote, proposal: merged.values)
        let final = rule.merge(input)
        guard final.count == merged.values.count else {
            throw .shapeMismatch(
                entity: entity.name, id: local.id, expected: merged.values.count,
                values: final.count, stamps: merged.stamps.count)
        }
        for index in 0..<final.count where final[index] != merged.values[index] {
            let stamp = context.computedStamp(local.stamps[index], remote.stamps[index])
            conflicts.append(FieldConflict(
                entity: entity.name, id: local.id, kind: .recordRule, field: entity.fields[index].name,
                fieldIndex: index, ancestor: base?.values[index], ancestorStamp: base?.stamps[index],
                local: local.values[index], localStamp: local.stamps[index], remote: remote.values[index],
                remoteStamp: remote.stamps[index], strategy: rule.name, winner: .merged, result: final[index]))
            merged.values[index] = final[index]
            merged.stamps[index] = stamp
        }
    }

    // MARK: Deletes

    /// One side deleted the record, the other has it alive.
    private mutating func resolveDelete(
        deleted: Record, tombstone: Stamp, deletedIsLocal: Bool, ancestor: Record?, edited: Record
    ) -> Record {
        // A tombstone the ancestor already had is no new delete: the other side re-created.
        if let ancestor, ancestor.tombstone == tombstone { return edited }
        // Which fields the living side changed since the ancestor (all, without one).
        var newestEdit = Stamp.none
        var editedAny = false
        let base = ancestor?.isDeleted == true ? nil : ancestor
        for index in 0..<entity.fields.count where base.map({ Self.changed(edited, $0, index) }) ?? true {
            editedAny = true
            newestEdit = max(newestEdit, edited.stamps[index])
        }
        guard editedAny else { return deleted }
        let deleteWins: Bool
        switch entity.deletePolicy {
        case .deleteWins: deleteWins = true
        case .editWins: deleteWins = false
        case .lastEditWins: deleteWins = tombstone > newestEdit
        }
        let winner: MergeWinner = deleteWins == deletedIsLocal ? .local : .remote
        conflicts.append(FieldConflict(
            entity: entity.name, id: edited.id, kind: .deleteVsEdit, field: nil, fieldIndex: nil,
            ancestor: nil, ancestorStamp: ancestor?.tombstone ?? nil,
            local: nil, localStamp: deletedIsLocal ? tombstone : newestEdit,
            remote: nil, remoteStamp: deletedIsLocal ? newestEdit : tombstone,
            strategy: entity.deletePolicy.rawValue, winner: winner, result: nil, deletedSide: deletedIsLocal ? .local : .remote,
            edited: edited))
        return deleteWins ? deleted : edited
    }

    // MARK: Result

    /// Works out what to upload and what to write locally.
    private func finish(_ merged: Record, local: Record, remote: Record) -> MergeResult {
        var result = MergeResult(
            merged: merged, upload: FieldMask(), writeLocally: FieldMask(), deletesRemotely: false,
            deletesLocally: false, recreatesRemotely: false, restoresLocally: false, conflicts: conflicts)
        if merged.isDeleted {
            result.deletesRemotely = !remote.isDeleted
            result.deletesLocally = !local.isDeleted
            return result
        }
        if remote.isDeleted {
            result.recreatesRemotely = true
            result.upload = entity.allFields
        } else {
            result.upload = Self.differences(merged, remote)
        }
        if local.isDeleted {
            result.restoresLocally = true
            result.writeLocally = entity.allFields
        } else {
            result.writeLocally = Self.differences(merged, local)
        }
        return result
    }

    /// Fields whose value differs, or whose stamps differ where both have one.
    static func differences(_ x: Record, _ y: Record) -> FieldMask {
        var mask = FieldMask()
        for index in 0..<x.values.count {
            let xs = x.stamps[index], ys = y.stamps[index]
            if x.values[index] != y.values[index] || (!xs.isNone && !ys.isNone && xs != ys) {
                mask.insert(index)
            }
        }
        return mask
    }
}
