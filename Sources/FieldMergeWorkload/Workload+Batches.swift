import FieldMerge

extension Workload {
    /// The benchmark entity `reminders`, fields in the workload's order.
    public static let remindersEntity = Entity("reminders", fields: [
        Field("title", .text),
        Field("notes", .text),
        Field("isCompleted", .bool),
        Field("priority", .integer),
        Field("dueDate", .integer),
        Field("listID", .integer),
        Field("position", .real),
        Field("flagged", .bool),
    ])

    /// The replica ids of the reference stamping: the server's base, replica A, replica B
    /// (B's is the larger, so equal clock values go to B).
    public static let baseReplica = ReplicaID(0x5E)
    public static let replicaA = ReplicaID(0xA)
    public static let replicaB = ReplicaID(0xB)

    /// The clock value of the base records: 2023-11-14T22:13:20Z.
    public static let baseTime = Stamp(milliseconds: 1_700_000_000_000, replica: baseReplica).clock

    /// The three batches of a merge under the reference stamping: the base as ancestor
    /// (every field stamped ``baseTime``), A's state as local and B's as remote, where each
    /// write is stamped `baseTime + 1 + writeIndex` by its replica.
    public func referenceBatches() -> (ancestors: RecordBatch, local: RecordBatch, remote: RecordBatch) {
        let fieldCount = ReminderField.allCases.count
        var ancestors = RecordBatch(fieldCount: fieldCount, reservingCapacity: base.count)
        let baseStamp = Stamp(clock: Self.baseTime, replica: Self.baseReplica)
        let stamps = ContiguousArray(repeating: baseStamp, count: fieldCount)
        var values = ContiguousArray<Value>(repeating: .null, count: fieldCount)
        for (index, row) in base.enumerated() {
            for field in ReminderField.allCases { values[field.rawValue] = Value(row[field]) }
            try! ancestors.append(id: Int64(index) + 1, values: values, stamps: stamps)
        }
        var local = ancestors, remote = ancestors
        Self.apply(editsA, to: &local, replica: Self.replicaA)
        Self.apply(editsB, to: &remote, replica: Self.replicaB)
        return (ancestors, local, remote)
    }

    private static func apply(_ edits: [FieldWrite], to batch: inout RecordBatch, replica: ReplicaID) {
        for (writeIndex, write) in edits.enumerated() {
            let stamp = Stamp(clock: baseTime + 1 + UInt64(writeIndex), replica: replica)
            batch.set(record: write.record, field: write.field.rawValue, value: Value(write.value), stamp: stamp)
        }
    }

    /// The merged rows of a batch merge result, for the digest.
    public static func rows(of result: BatchMergeResult) -> [ReminderRow] {
        var rows: [ReminderRow] = []
        rows.reserveCapacity(result.count)
        for index in 0..<result.count {
            func value(_ field: ReminderField) -> Value { result.value(record: index, field: field.rawValue) }
            rows.append(ReminderRow(
                title: value(.title).textValue, notes: value(.notes).textValue,
                isCompleted: value(.isCompleted).boolValue, priority: value(.priority).integerValue,
                dueDate: value(.dueDate).integerValue, listID: value(.listID).integerValue,
                position: value(.position).realValue, flagged: value(.flagged).boolValue))
        }
        return rows
    }
}

extension Value {
    /// The core value of a workload value.
    public init(_ value: ReminderValue) {
        switch value {
        case .text(let v): self = .text(v)
        case .bool(let v): self = .bool(v)
        case .integer(let v): self = .integer(v)
        case .real(let v): self = .real(v)
        }
    }

    fileprivate var textValue: String { if case .text(let v) = self { return v } else { return "" } }
    fileprivate var boolValue: Bool { if case .bool(let v) = self { return v } else { return false } }
    fileprivate var integerValue: Int64 { if case .integer(let v) = self { return v } else { return 0 } }
    fileprivate var realValue: Double { if case .real(let v) = self { return v } else { return .nan } }
}
