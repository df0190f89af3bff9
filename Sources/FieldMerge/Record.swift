/// One record: its id, a value and a stamp per field in schema order, and a tombstone.
///
/// Values and stamps live in contiguous arrays indexed by field position, not in
/// dictionaries keyed by name: six-figure record sets are the normal case.
public struct Record: Hashable, Sendable, CustomStringConvertible {
    /// The entity's name.
    public var entity: String
    /// The record's id: permanent ids are positive, temporary ids (not yet confirmed by the
    /// server) negative.
    public var id: Int64
    public var values: ContiguousArray<Value>
    public var stamps: ContiguousArray<Stamp>
    /// The delete's stamp when the record is deleted, else nil.
    public var tombstone: Stamp?

    public init(
        entity: String, id: Int64, values: ContiguousArray<Value>, stamps: ContiguousArray<Stamp>,
        tombstone: Stamp? = nil
    ) {
        self.entity = entity
        self.id = id
        self.values = values
        self.stamps = stamps
        self.tombstone = tombstone
    }

    /// A record of `entity` with every field stamped `stamp`.
    public init(_ entity: Entity, id: Int64, values: ContiguousArray<Value>, stamp: Stamp) {
        self.init(
            entity: entity.name, id: id, values: values,
            stamps: ContiguousArray(repeating: stamp, count: values.count))
    }

    /// Whether the record is deleted.
    @inlinable
    public var isDeleted: Bool { tombstone != nil }

    /// Sets field `index` to `value` with stamp `stamp`.
    public mutating func set(_ index: Int, _ value: Value, stamp: Stamp) {
        values[index] = value
        stamps[index] = stamp
    }

    /// The value of the field named `name` in `entity`, or nil if there is no such field.
    public subscript(_ name: String, in entity: Entity) -> Value? {
        entity.fieldIndex(name).map { values[$0] }
    }

    /// Checks that the record has one value and stamp per field and that every value fits
    /// its field's type.
    public func validate(against entity: Entity) throws(MergeError) {
        guard values.count == entity.fields.count, stamps.count == entity.fields.count else {
            throw .shapeMismatch(
                entity: entity.name, id: id, expected: entity.fields.count,
                values: values.count, stamps: stamps.count)
        }
        for (index, field) in entity.fields.enumerated() where !values[index].fits(field.type) {
            throw .typeMismatch(
                entity: entity.name, id: id, field: field.name,
                expected: field.type.name, got: values[index].kind.rawValue)
        }
    }

    public var description: String {
        let body = zip(values, stamps).map { "\($0)@\($1)" }.joined(separator: ", ")
        return "\(entity)#\(id)(\(body))" + (tombstone.map { " deleted@\($0)" } ?? "")
    }
}
