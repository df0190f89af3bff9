extension ThreeWayMerge {
    /// Merges many records of one entity three ways at once.
    ///
    /// Record `i` of `ancestors`, `local` and `remote` must be the same record. Each record
    /// is first classified by its stamps alone: a record whose stamps all equal the
    /// ancestor's on one side is taken whole from the other side, without looking at its
    /// values. A record both sides changed, in different fields or to equal values, is
    /// picked field by field from the two sides without building any record. Only real
    /// conflicts, deletes, records without stamps or without an ancestor, and entities
    /// with a record-level strategy go through
    /// ``merge(_:ancestor:local:remote:context:)``. Every path gives what that function
    /// gives.
    ///
    /// - Parameters:
    ///   - entity: The entity of every record.
    ///   - ancestors: The server-acknowledged versions.
    ///   - local: This replica's versions.
    ///   - remote: The server's versions.
    ///   - ancestorPresent: One flag per record; `false` means the record has no ancestor
    ///     (its row in `ancestors` is ignored). `nil` means every record has one.
    ///   - context: The stamp of values that neither side wrote (``MergeContext``).
    /// - Returns: The outcome per record, the field-wise results, the conflicts.
    /// - Complexity: O(*n* · *f*) stamp comparisons for *n* records of *f* fields, with no
    ///   allocation for records without a conflict.
    public static func mergeBatch(
        _ entity: Entity, ancestors: RecordBatch, local: RecordBatch, remote: RecordBatch,
        ancestorPresent: ContiguousArray<Bool>? = nil, context: MergeContext = MergeContext()
    ) throws(MergeError) -> BatchMergeResult {
        try checkShapes(entity, ancestors: ancestors, local: local, remote: remote, ancestorPresent: ancestorPresent)
        let count = local.count
        var outcomes = ContiguousArray<BatchMergeResult.Outcome>(repeating: .unchanged, count: count)
        var candidates: [Int] = []
        let exact = ancestors.unstampedCount + local.unstampedCount + remote.unstampedCount > 0
        outcomes.withUnsafeMutableBufferPointer { out in
            classify(
                fieldCount: entity.fields.count, ancestors: ancestors, local: local, remote: remote,
                checkUnstamped: exact, into: out, candidates: &candidates)
        }
        if let ancestorPresent {
            // A record without an ancestor is never decided by stamps alone.
            for index in 0..<count where !ancestorPresent[index] && outcomes[index] != .merged {
                outcomes[index] = .merged
                candidates.append(index)
            }
            candidates.sort()
        }
        var picks = BatchMergeResult.Picks()
        var results = ContiguousArray<MergeResult>()
        var resultIndices = ContiguousArray<Int>()
        var merger = RecordMerger(entity: entity, context: context)
        let quick = entity.recordStrategy == nil && !exact
        for index in candidates {
            let hasAncestor = ancestorPresent?[index] ?? true
            if hasAncestor, ancestors.ids[index] != local.ids[index] {
                throw .idMismatch(
                    entity: entity.name, ancestor: ancestors.ids[index], local: local.ids[index],
                    remote: remote.ids[index])
            }
            if quick, hasAncestor,
                let mask = pick(index, entity: entity, ancestors: ancestors, local: local, remote: remote)
            {
                outcomes[index] = .picked
                picks.indices.append(index)
                picks.remoteFields.append(mask)
                continue
            }
            outcomes[index] = .merged
            merger.conflicts.removeAll(keepingCapacity: true)
            resultIndices.append(index)
            results.append(try merger.merge(
                ancestor: hasAncestor ? ancestors.record(at: index, entity: entity.name) : nil,
                local: local.record(at: index, entity: entity.name),
                remote: remote.record(at: index, entity: entity.name)))
        }
        return BatchMergeResult(
            entity: entity, outcomes: outcomes, picks: picks, mergedIndices: resultIndices, merged: results,
            local: local, remote: remote)
    }

    private static func checkShapes(
        _ entity: Entity, ancestors: RecordBatch, local: RecordBatch, remote: RecordBatch,
        ancestorPresent: ContiguousArray<Bool>?
    ) throws(MergeError) {
        let fieldCount = entity.fields.count, count = local.count
        guard ancestors.fieldCount == fieldCount, local.fieldCount == fieldCount, remote.fieldCount == fieldCount else {
            throw .batchMismatch("batches must have \(fieldCount) fields per record, as entity '\(entity.name)'")
        }
        guard ancestors.count == count, remote.count == count, ancestorPresent.map({ $0.count == count }) ?? true else {
            throw .batchMismatch("batches must hold the same number of records")
        }
        guard local.ids == remote.ids else {
            throw .batchMismatch("local and remote batches must hold the same ids in the same order")
        }
    }

    /// The stamp-only pass: one outcome per record, and the records both sides changed.
    /// This is the loop six-figure batches spend their time in: it reads each record's
    /// stamps as machine words and keeps a running difference per side.
    private static func classify(
        fieldCount: Int, ancestors: RecordBatch, local: RecordBatch, remote: RecordBatch,
        checkUnstamped: Bool, into out: UnsafeMutableBufferPointer<BatchMergeResult.Outcome>,
        candidates: inout [Int]
    ) {
        let words = 2 &* fieldCount
        ancestors.stamps.withUnsafeBytes { aBytes in
            local.stamps.withUnsafeBytes { lBytes in
                remote.stamps.withUnsafeBytes { rBytes in
                    ancestors.tombstones.withUnsafeBufferPointer { at in
                        local.tombstones.withUnsafeBufferPointer { lt in
                            remote.tombstones.withUnsafeBufferPointer { rt in
                                let a = aBytes.bindMemory(to: UInt64.self)
                                let l = lBytes.bindMemory(to: UInt64.self)
                                let r = rBytes.bindMemory(to: UInt64.self)
                                var offset = 0
                                for index in 0..<out.count {
                                    var dl = (at[index].clock ^ lt[index].clock)
                                        | (at[index].replica.rawValue ^ lt[index].replica.rawValue)
                                    var dr = (at[index].clock ^ rt[index].clock)
                                        | (at[index].replica.rawValue ^ rt[index].replica.rawValue)
                                    for word in offset..<(offset &+ words) {
                                        let x = a[word]
                                        dl |= x ^ l[word]
                                        dr |= x ^ r[word]
                                    }
                                    var unstamped = false
                                    if checkUnstamped {
                                        for word in stride(from: offset, to: offset &+ words, by: 2) {
                                            unstamped = unstamped || a[word] == 0 || l[word] == 0 || r[word] == 0
                                        }
                                    }
                                    offset &+= words
                                    if unstamped || (dl != 0 && dr != 0) {
                                        out[index] = .merged
                                        candidates.append(index)
                                    } else if dr == 0 {
                                        out[index] = dl == 0 ? .unchanged : .local
                                    } else {
                                        out[index] = .remote
                                    }
                                }
                            }
                        }
                    }
                }
            }
        }
    }

    /// Picks each field of a record that both sides changed from one side, when no field
    /// is a real conflict and no side deleted it: the remote fields as a mask, or nil.
    private static func pick(
        _ index: Int, entity: Entity, ancestors: RecordBatch, local: RecordBatch, remote: RecordBatch
    ) -> FieldMask? {
        guard ancestors.tombstones[index].isNone, local.tombstones[index].isNone,
            remote.tombstones[index].isNone
        else { return nil }
        var mask = FieldMask()
        let fieldCount = entity.fields.count
        let first = index * fieldCount
        for field in 0..<fieldCount {
            let a = ancestors.stamps[first + field], l = local.stamps[first + field], r = remote.stamps[first + field]
            switch (l != a, r != a) {
            case (_, false): continue
            case (false, true): mask.insert(field)
            case (true, true):
                guard local.values[first + field] == remote.values[first + field],
                    !entity.strategy(at: field).sumsEqualEdits
                else { return nil }
                if r > l { mask.insert(field) }
            }
        }
        return mask
    }
}
