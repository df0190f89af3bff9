/// The outcome of ``ThreeWayMerge/mergeBatch(_:ancestors:local:remote:ancestorPresent:context:)``.
///
/// Most records of a batch are decided whole by their stamps; the result keeps only an
/// ``Outcome`` for those and reads their values from the input batches when asked. Records
/// that both sides changed carry a full ``MergeResult``.
public struct BatchMergeResult: Sendable {
    /// How one record was decided.
    public enum Outcome: UInt8, Sendable {
        /// Neither side changed it: the local record stands, nothing to do.
        case unchanged
        /// Only the local side changed it: the local record stands, its changes are uploaded.
        case local
        /// Only the remote side changed it: the remote record is written locally.
        case remote
        /// Both sides changed it, in different fields or to equal values: each field was
        /// taken from one side, no conflict.
        case picked
        /// Merged field by field with ``ThreeWayMerge/merge(_:ancestor:local:remote:context:)``:
        /// see ``fieldwiseResult(at:)``.
        case merged
    }

    /// The records decided by ``Outcome/picked``: positions ascending, and for each the
    /// fields taken from the remote side (the others are local).
    public struct Picks: Sendable {
        public var indices = ContiguousArray<Int>()
        public var remoteFields = ContiguousArray<FieldMask>()
    }

    public let entity: Entity
    /// One outcome per record, in batch order.
    public let outcomes: ContiguousArray<Outcome>
    public let picks: Picks
    /// The positions of the records merged field by field, ascending.
    public let mergedIndices: ContiguousArray<Int>
    /// Their results, in the order of ``mergedIndices``.
    public let merged: ContiguousArray<MergeResult>
    let local: RecordBatch
    let remote: RecordBatch

    init(
        entity: Entity, outcomes: ContiguousArray<Outcome>, picks: Picks, mergedIndices: ContiguousArray<Int>,
        merged: ContiguousArray<MergeResult>, local: RecordBatch, remote: RecordBatch
    ) {
        self.entity = entity
        self.outcomes = outcomes
        self.picks = picks
        self.mergedIndices = mergedIndices
        self.merged = merged
        self.local = local
        self.remote = remote
    }

    /// The number of records.
    public var count: Int { outcomes.count }

    /// Every conflict of the batch, in record order.
    public var conflicts: [FieldConflict] { merged.flatMap(\.conflicts) }

    /// How many records had each outcome.
    public func tally() -> (unchanged: Int, local: Int, remote: Int, picked: Int, merged: Int) {
        var counts = (0, 0, 0, 0, 0)
        for outcome in outcomes {
            switch outcome {
            case .unchanged: counts.0 += 1
            case .local: counts.1 += 1
            case .remote: counts.2 += 1
            case .picked: counts.3 += 1
            case .merged: counts.4 += 1
            }
        }
        return counts
    }

    /// The field-wise result of record `index`, if it was merged field by field.
    public func fieldwiseResult(at index: Int) -> MergeResult? {
        guard outcomes[index] == .merged else { return nil }
        return merged[Self.position(of: index, in: mergedIndices)]
    }

    /// The fields of a picked record taken from the remote side, or nil.
    public func remoteFields(at index: Int) -> FieldMask? {
        guard outcomes[index] == .picked else { return nil }
        return picks.remoteFields[Self.position(of: index, in: picks.indices)]
    }

    private static func position(of index: Int, in sorted: ContiguousArray<Int>) -> Int {
        var low = 0, high = sorted.count
        while low < high {
            let mid = (low + high) / 2
            if sorted[mid] < index { low = mid + 1 } else { high = mid }
        }
        return low
    }

    /// The merged value of field `field` of record `index`, without building the record.
    public func value(record index: Int, field: Int) -> Value {
        switch outcomes[index] {
        case .unchanged, .local: return local.value(record: index, field: field)
        case .remote: return remote.value(record: index, field: field)
        case .picked:
            let fromRemote = remoteFields(at: index)!.contains(field)
            return (fromRemote ? remote : local).value(record: index, field: field)
        case .merged: return fieldwiseResult(at: index)!.merged.values[field]
        }
    }

    /// The full result of record `index`, as ``ThreeWayMerge/merge(_:ancestor:local:remote:context:)``
    /// gives it.
    public func result(at index: Int) -> MergeResult {
        if let result = fieldwiseResult(at: index) { return result }
        let localRecord = local.record(at: index, entity: entity.name)
        let remoteRecord = remote.record(at: index, entity: entity.name)
        switch outcomes[index] {
        case .remote:
            return Self.wholeResult(remoteRecord, other: localRecord, entity: entity, otherIsLocal: true)
        case .picked:
            var merged = localRecord
            for field in remoteFields(at: index)! {
                merged.set(field, remoteRecord.values[field], stamp: remoteRecord.stamps[field])
            }
            return MergeResult(
                merged: merged, upload: RecordMerger.differences(merged, remoteRecord),
                writeLocally: RecordMerger.differences(merged, localRecord), deletesRemotely: false,
                deletesLocally: false, recreatesRemotely: false, restoresLocally: false, conflicts: [])
        default:
            return Self.wholeResult(localRecord, other: remoteRecord, entity: entity, otherIsLocal: false)
        }
    }

    /// The result of taking `record` whole over `other`.
    private static func wholeResult(_ record: Record, other: Record, entity: Entity, otherIsLocal: Bool) -> MergeResult {
        var result = MergeResult(
            merged: record, upload: FieldMask(), writeLocally: FieldMask(), deletesRemotely: false,
            deletesLocally: false, recreatesRemotely: false, restoresLocally: false, conflicts: [])
        var mask = FieldMask()
        var deletes = false, revives = false
        if record.isDeleted {
            deletes = !other.isDeleted
        } else if other.isDeleted {
            revives = true
            mask = entity.allFields
        } else {
            mask = RecordMerger.differences(record, other)
        }
        if otherIsLocal {
            (result.writeLocally, result.deletesLocally, result.restoresLocally) = (mask, deletes, revives)
        } else {
            (result.upload, result.deletesRemotely, result.recreatesRemotely) = (mask, deletes, revives)
        }
        return result
    }
}
