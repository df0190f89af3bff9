import FieldMerge

/// An app type that holds the records of one entity: the typed way to use a ``Store``.
///
/// ```swift
/// struct Reminder: StoredRecord {
///     var id: Int64 = 0
///     var title = ""
///     var isDone = false
///     var listID: Int64?
///     static let table = RecordTable<Reminder>("reminders", [
///         .text("title", \.title),
///         .bool("isDone", \.isDone),
///         .reference("listID", \.listID, to: "lists", onDelete: .cascade),
///     ])
/// }
/// let schema = try Schema([TodoList.table.entity, Reminder.table.entity])
/// let store = try Store(.memory, schema: schema)
/// var reminder = Reminder(title: "Milk")
/// try store.insert(&reminder)          // reminder.id is now -1, a temporary id
/// reminder.isDone = true
/// try store.save(reminder)             // stamps and queues `isDone` only
/// ```
public protocol StoredRecord {
    /// The entity and how its fields map to this type's properties.
    static var table: RecordTable<Self> { get }
    /// The record's id; 0 before the first insert.
    var id: Int64 { get set }
    /// A blank value that ``RecordTable`` fills from a stored row.
    init()
}

/// An entity described through a Swift type's properties.
public struct RecordTable<Row>: Sendable {
    public let entity: Entity
    let columns: [Column<Row>]

    public init(
        _ name: String, defaultStrategy: FieldStrategy = .lastEditWins, deletePolicy: DeletePolicy = .deleteWins,
        recordStrategy: (any RecordMergeStrategy)? = nil, _ columns: [Column<Row>]
    ) {
        self.columns = columns
        entity = Entity(
            name, fields: columns.map(\.field), defaultStrategy: defaultStrategy, deletePolicy: deletePolicy,
            recordStrategy: recordStrategy)
    }

    /// The values of `row` in schema order.
    func values(of row: Row) -> ContiguousArray<Value> {
        ContiguousArray(columns.map { $0.read(row) })
    }

    /// A value filled from a stored record.
    func row(from record: Record) throws(StoreError) -> Row where Row: StoredRecord {
        var row = Row()
        row.id = record.id
        for (index, column) in columns.enumerated() {
            guard column.write(&row, record.values[index]) else {
                let what = column.mismatch?(record.values[index]) ?? "\(record.values[index].kind.rawValue), which the property cannot take"
                throw StoreError(.invalidRecord, "field '\(column.field.name)' holds \(what)", entity: entity.name, id: record.id)
            }
        }
        return row
    }
}

/// One field of a ``RecordTable``: its name, type and strategy, and the property it maps to.
///
/// Every factory takes the field's `default:` (the value records that exist when the field
/// is added to a schema get; null when not given) and `renamedFrom:` (the field's name in
/// the schema version before, when this version renames it: values, stamps and pending
/// edits stay). Specs/schema.md, "Evolution".
public struct Column<Row>: Sendable {
    public let field: Field
    let read: @Sendable (Row) -> Value
    /// Sets the property; false when the value does not fit it.
    let write: @Sendable (inout Row, Value) -> Bool
    /// The property the column maps to, for queries that name it by key path.
    let keyPath: (AnyKeyPath & Sendable)?
    /// A value of the property's type as the field stores it; nil for another type.
    let encode: @Sendable (any Sendable) -> Value?
    /// Says what a stored value the property cannot take is (nil: its kind says it).
    let mismatch: (@Sendable (Value) -> String)?

    init(
        _ field: Field, keyPath: (AnyKeyPath & Sendable)? = nil, read: @escaping @Sendable (Row) -> Value,
        write: @escaping @Sendable (inout Row, Value) -> Bool, encode: @escaping @Sendable (any Sendable) -> Value? = { _ in nil },
        mismatch: (@Sendable (Value) -> String)? = nil
    ) {
        self.field = field
        self.keyPath = keyPath
        self.read = read
        self.write = write
        self.encode = encode
        self.mismatch = mismatch
    }

    /// A column for a property of a type that converts to and from ``Value``.
    static func mapped<T>(
        _ name: String, _ type: FieldType, _ path: WritableKeyPath<Row, T> & Sendable, strategy: FieldStrategy?,
        default defaultValue: T? = nil, renamedFrom: String? = nil,
        to value: @escaping @Sendable (T) -> Value, from: @escaping @Sendable (Value) -> T?,
        mismatch: (@Sendable (Value) -> String)? = nil
    ) -> Column {
        let field = Field(name, type, strategy: strategy, default: defaultValue.map(value) ?? .null, renamedFrom: renamedFrom)
        return Column(field, keyPath: path, read: { value($0[keyPath: path]) }, write: { row, stored in
            guard let converted = from(stored) else { return false }
            row[keyPath: path] = converted
            return true
        }, encode: { operand in (operand as? T).map(value) }, mismatch: mismatch)
    }

    public static func text(_ name: String, _ path: WritableKeyPath<Row, String> & Sendable, strategy: FieldStrategy? = nil,
        default defaultValue: String? = nil, renamedFrom: String? = nil
    ) -> Column {
        mapped(name, .text, path, strategy: strategy, default: defaultValue, renamedFrom: renamedFrom, to: Value.text) { if case .text(let v) = $0 { v } else { nil } }
    }

    public static func text(_ name: String, _ path: WritableKeyPath<Row, String?> & Sendable, strategy: FieldStrategy? = nil,
        default defaultValue: String? = nil, renamedFrom: String? = nil
    ) -> Column {
        mapped(name, .text, path, strategy: strategy, default: defaultValue, renamedFrom: renamedFrom, to: { $0.map(Value.text) ?? .null }) {
            switch $0 { case .text(let v): .some(v); case .null: .some(nil); default: nil }
        }
    }

    public static func integer(_ name: String, _ path: WritableKeyPath<Row, Int64> & Sendable, strategy: FieldStrategy? = nil,
        default defaultValue: Int64? = nil, renamedFrom: String? = nil
    ) -> Column {
        mapped(name, .integer, path, strategy: strategy, default: defaultValue, renamedFrom: renamedFrom, to: Value.integer) { if case .integer(let v) = $0 { v } else { nil } }
    }

    public static func real(_ name: String, _ path: WritableKeyPath<Row, Double> & Sendable, strategy: FieldStrategy? = nil,
        default defaultValue: Double? = nil, renamedFrom: String? = nil
    ) -> Column {
        mapped(name, .real, path, strategy: strategy, default: defaultValue, renamedFrom: renamedFrom, to: Value.real) { if case .real(let v) = $0 { v } else { nil } }
    }

    public static func bool(_ name: String, _ path: WritableKeyPath<Row, Bool> & Sendable, strategy: FieldStrategy? = nil,
        default defaultValue: Bool? = nil, renamedFrom: String? = nil
    ) -> Column {
        mapped(name, .bool, path, strategy: strategy, default: defaultValue, renamedFrom: renamedFrom, to: Value.bool) { if case .bool(let v) = $0 { v } else { nil } }
    }

    /// Milliseconds since 1970, UTC; nil is null.
    public static func date(_ name: String, _ path: WritableKeyPath<Row, Int64?> & Sendable, strategy: FieldStrategy? = nil,
        default defaultValue: Int64? = nil, renamedFrom: String? = nil
    ) -> Column {
        mapped(name, .date, path, strategy: strategy, default: defaultValue, renamedFrom: renamedFrom, to: { $0.map(Value.date) ?? .null }) {
            switch $0 { case .date(let v): .some(v); case .null: .some(nil); default: nil }
        }
    }

    public static func blob(_ name: String, _ path: WritableKeyPath<Row, [UInt8]> & Sendable, strategy: FieldStrategy? = nil,
        default defaultValue: [UInt8]? = nil, renamedFrom: String? = nil
    ) -> Column {
        mapped(name, .blob, path, strategy: strategy, default: defaultValue, renamedFrom: renamedFrom, to: Value.blob) { if case .blob(let v) = $0 { v } else { nil } }
    }

    public static func textSet(_ name: String, _ path: WritableKeyPath<Row, Set<String>> & Sendable, strategy: FieldStrategy? = nil,
        default defaultValue: Set<String>? = nil, renamedFrom: String? = nil
    ) -> Column {
        mapped(name, .textSet, path, strategy: strategy, default: defaultValue, renamedFrom: renamedFrom, to: { .textSet(TextSet($0)) }) {
            switch $0 { case .textSet(let v): Set(v.elements); case .null: []; default: nil }
        }
    }

    /// The id of a record of `target`, or nil.
    public static func reference(
        _ name: String, _ path: WritableKeyPath<Row, Int64?> & Sendable, to target: String, onDelete: ReferenceAction,
        strategy: FieldStrategy? = nil, default defaultValue: Int64? = nil, renamedFrom: String? = nil
    ) -> Column {
        mapped(name, .reference(to: target, onDelete: onDelete), path, strategy: strategy, default: defaultValue,
               renamedFrom: renamedFrom, to: { $0.map(Value.integer) ?? .null }) {
            switch $0 { case .integer(let v): .some(v); case .null: .some(nil); default: nil }
        }
    }
}

extension Store {
    /// Inserts `record` with a new temporary id, which is written back into it.
    public func insert<R: StoredRecord>(_ record: inout R) throws(StoreError) {
        record.id = try insert(R.table.entity.name, values: R.table.values(of: record))
    }

    /// Saves `record`: only the fields whose value changed are stamped and queued.
    ///
    /// A record still holding the temporary id it was inserted under is saved to the
    /// permanent id the server gave it since (``currentID(of:)``).
    /// - Returns: The fields that changed.
    @discardableResult
    public func save<R: StoredRecord>(_ record: R) throws(StoreError) -> FieldMask {
        let values = R.table.values(of: record)
        return try update(R.table.entity.name, id: try currentID(of: record), set: values.enumerated().map { (field: $0.offset, value: $0.element) })
    }

    /// The record with this id (a temporary id the server has replaced finds the record
    /// under its permanent id), or nil (also when it is deleted).
    public func fetch<R: StoredRecord>(_ type: R.Type, id: Int64) throws(StoreError) -> R? {
        guard let record = try record(R.table.entity.name, id: try currentID(R.table.entity.name, id)), !record.isDeleted else { return nil }
        return try R.table.row(from: record)
    }

    /// Every living record of the entity, by id (permanent ids first in ascending order, then
    /// records not yet on the server, newest temporary id last).
    public func fetchAll<R: StoredRecord>(_ type: R.Type) throws(StoreError) -> [R] {
        // One pass over the table (its rows are the living records; tombstones live apart).
        try fetchAll(R.all)
    }

    /// Deletes `record`, following the schema's references (by its permanent id when the
    /// server has replaced the temporary one it holds).
    public func delete<R: StoredRecord>(_ record: R) throws(StoreError) {
        try delete(R.table.entity.name, id: try currentID(of: record))
    }

    /// The id `record` has in the store now: its own, or, for a temporary id the server has
    /// replaced, the permanent one. Assign it back to keep the record current.
    public func currentID<R: StoredRecord>(of record: R) throws(StoreError) -> Int64 {
        try currentID(R.table.entity.name, record.id)
    }

    /// `id`, or the permanent id that replaced it when it is a temporary one.
    func currentID(_ entity: String, _ id: Int64) throws(StoreError) -> Int64 {
        guard id < 0 else { return id }
        return try permanentID(entity, temporary: id) ?? id
    }
}
