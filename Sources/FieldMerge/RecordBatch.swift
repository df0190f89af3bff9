/// Many records of one entity in flat storage, row-major: record `i`'s field `f` is at
/// `i * fieldCount + f` of ``values`` and ``stamps``.
///
/// This is the layout the batch merge reads: no per-record allocation, stamps of one
/// record next to each other.
public struct RecordBatch: Sendable {
    public let fieldCount: Int
    public private(set) var ids: ContiguousArray<Int64>
    public private(set) var values: ContiguousArray<Value>
    public private(set) var stamps: ContiguousArray<Stamp>
    /// One per record: the tombstone's stamp, or ``Stamp/none`` for a living record.
    public private(set) var tombstones: ContiguousArray<Stamp>
    /// How many field stamps have a zero clock (missing stamps): while there are none, the
    /// batch merge compares stamps without checking for them.
    public private(set) var unstampedCount = 0

    public init(fieldCount: Int, reservingCapacity capacity: Int = 0) {
        self.fieldCount = fieldCount
        ids = []
        values = []
        stamps = []
        tombstones = []
        ids.reserveCapacity(capacity)
        values.reserveCapacity(capacity * fieldCount)
        stamps.reserveCapacity(capacity * fieldCount)
        tombstones.reserveCapacity(capacity)
    }

    /// The number of records.
    @inlinable
    public var count: Int { ids.count }

    /// Appends a record; its values and stamps must have ``fieldCount`` elements each.
    public mutating func append(_ record: Record) throws(MergeError) {
        guard record.values.count == fieldCount, record.stamps.count == fieldCount else {
            throw .shapeMismatch(
                entity: record.entity, id: record.id, expected: fieldCount,
                values: record.values.count, stamps: record.stamps.count)
        }
        ids.append(record.id)
        values.append(contentsOf: record.values)
        stamps.append(contentsOf: record.stamps)
        unstampedCount += Self.unstamped(record.stamps)
        tombstones.append(record.tombstone ?? .none)
    }

    /// Appends a record from its parts; `values` and `stamps` must have ``fieldCount``
    /// elements each.
    public mutating func append(
        id: Int64, values newValues: some Collection<Value>, stamps newStamps: some Collection<Stamp>,
        tombstone: Stamp? = nil
    ) throws(MergeError) {
        guard newValues.count == fieldCount, newStamps.count == fieldCount else {
            throw .shapeMismatch(
                entity: "batch", id: id, expected: fieldCount, values: newValues.count, stamps: newStamps.count)
        }
        ids.append(id)
        values.append(contentsOf: newValues)
        stamps.append(contentsOf: newStamps)
        unstampedCount += Self.unstamped(newStamps)
        tombstones.append(tombstone ?? .none)
    }

    private static func unstamped(_ stamps: some Collection<Stamp>) -> Int {
        stamps.reduce(0) { $0 + ($1.clock == 0 ? 1 : 0) }
    }

    /// Sets field `field` of record `index`.
    public mutating func set(record index: Int, field: Int, value: Value, stamp: Stamp) {
        precondition(field >= 0 && field < fieldCount, "field position out of range")
        let position = index * fieldCount + field
        unstampedCount += (stamp.clock == 0 ? 1 : 0) - (stamps[position].clock == 0 ? 1 : 0)
        values[position] = value
        stamps[position] = stamp
    }

    /// Marks record `index` deleted with `stamp`, or alive with nil.
    public mutating func setTombstone(record index: Int, _ stamp: Stamp?) {
        tombstones[index] = stamp ?? .none
    }

    /// The value of field `field` of record `index`.
    @inlinable
    public func value(record index: Int, field: Int) -> Value { values[index &* fieldCount &+ field] }

    /// The stamp of field `field` of record `index`.
    @inlinable
    public func stamp(record index: Int, field: Int) -> Stamp { stamps[index &* fieldCount &+ field] }

    /// Record `index` as a ``Record`` of entity `entity`.
    public func record(at index: Int, entity: String) -> Record {
        let range = index * fieldCount..<(index + 1) * fieldCount
        let tombstone = tombstones[index]
        return Record(
            entity: entity, id: ids[index], values: ContiguousArray(values[range]),
            stamps: ContiguousArray(stamps[range]), tombstone: tombstone.isNone ? nil : tombstone)
    }
}
