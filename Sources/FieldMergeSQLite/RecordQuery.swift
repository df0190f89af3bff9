import FieldMerge

/// A query over the living records of one ``StoredRecord`` type: filters, order, limit.
///
/// Build one from ``StoredRecord/all`` and run it with `Store.fetchAll(_:)` of a query,
/// ``Store/fetchOne(_:)`` or ``Store/fetchCount(_:)``. Columns are named by key path (the
/// property a ``Column`` maps) or by field name (``StoredRecord/field(_:)``); values are
/// always bound as parameters, never spliced into the SQL.
///
/// ```swift
/// let urgent = try store.fetchAll(Note.all.filter(\.severity >= 3 && \.title != "").order(\.title).limit(20))
/// let open = try store.fetchCount(Note.all.filter(.in(\.status, [.open, .blocked])))
/// let named = try store.fetchAll(Note.all.filter(Note.field("title") == "Milk"))
/// ```
///
/// Deleted records are never returned (their tombstones live apart from the table). Without
/// an order, or between equal keys, records come by id as `Store.fetchAll(_:)` of a type
/// gives them: permanent ids ascending, then records not yet on the server.
public struct RecordQuery<Row: StoredRecord>: Sendable {
    /// The direction of one sort key.
    public enum Direction: Sendable {
        case ascending, descending
    }

    var filters: [QueryFilter<Row>] = []
    var ordering: [(column: QueryColumn, direction: Direction)] = []
    var limit: Int?
    var offset = 0

    /// Every living record of `Row`.
    public init() {}

    /// The records this query returns that also match `filter` (filters add up: all must match).
    public func filter(_ filter: QueryFilter<Row>) -> RecordQuery {
        var query = self
        query.filters.append(filter)
        return query
    }

    /// Sorts by the column `path` maps (after the sort keys given before).
    ///
    /// - Parameters:
    ///   - path: A property a ``Column`` of `Row`'s table maps, or `\.id`.
    ///   - direction: Ascending (the default) or descending.
    public func order<T>(_ path: KeyPath<Row, T> & Sendable, _ direction: Direction = .ascending) -> RecordQuery {
        var query = self
        query.ordering.append((.path(path), direction))
        return query
    }

    /// Sorts by the field named `field` (after the sort keys given before).
    ///
    /// - Parameters:
    ///   - field: The field's name in the schema, or `id`.
    ///   - direction: Ascending (the default) or descending.
    public func order(_ field: String, _ direction: Direction = .ascending) -> RecordQuery {
        var query = self
        query.ordering.append((.name(field), direction))
        return query
    }

    /// At most `count` records, after skipping `offset` of them.
    ///
    /// - Parameters:
    ///   - count: The most records to return; negative is ``StoreError/Code/invalidArgument``.
    ///   - offset: How many matching records to skip first.
    public func limit(_ count: Int, offset: Int = 0) -> RecordQuery {
        var query = self
        query.limit = count
        query.offset = offset
        return query
    }
}

extension StoredRecord {
    /// A query over every living record of this type, to narrow with
    /// ``RecordQuery/filter(_:)``, `order(_:_:)` and ``RecordQuery/limit(_:offset:)``.
    public static var all: RecordQuery<Self> { RecordQuery() }

    /// The field named `name`, for filters that name a column by field name.
    public static func field(_ name: String) -> QueryField<Self> { QueryField(name) }
}

/// A column of a query: the property a ``Column`` maps, or a field's name.
enum QueryColumn: Sendable {
    case path(AnyKeyPath & Sendable)
    case name(String)
}

/// A field named by its name in the schema, for filters: `Note.field("title") == "Milk"`.
/// Its values are `Value`s of the field's kind (a literal of the right kind works).
public struct QueryField<Row>: Sendable {
    let name: String

    /// The field named `name` (or `id`).
    public init(_ name: String) { self.name = name }
}

/// A condition on the records of a ``RecordQuery``: comparisons of columns with values,
/// `isNull`, `in`, and their combinations with `&&`, `||` and `!`.
///
/// A comparison with nil (`\.listID == nil`) is SQL's `IS NULL` (`!=`: `IS NOT NULL`); an
/// ordering comparison with nil is ``StoreError/Code/invalidArgument``.
public struct QueryFilter<Row>: Sendable {
    enum Comparison: String, Sendable {
        case equal = "=", notEqual = "<>", less = "<", lessOrEqual = "<=", greater = ">", greaterOrEqual = ">="
    }

    /// A value of a filter: of the property's type (converted as its column stores it), or
    /// a `Value` for a column named by field name.
    enum Operand: Sendable {
        case typed(any Sendable)
        case value(Value)
    }

    indirect enum Node: Sendable {
        case compare(QueryColumn, Comparison, Operand)
        case isNull(QueryColumn)
        case isIn(QueryColumn, [Operand])
        case and(Node, Node)
        case or(Node, Node)
        case not(Node)
    }

    let node: Node

    /// Records whose column `path` is null.
    public static func isNull<T>(_ path: KeyPath<Row, T> & Sendable) -> QueryFilter {
        QueryFilter(node: .isNull(.path(path)))
    }

    /// Records whose field `field` is null.
    public static func isNull(_ field: QueryField<Row>) -> QueryFilter {
        QueryFilter(node: .isNull(.name(field.name)))
    }

    /// Records whose column `path` holds one of `values` (none for an empty list).
    ///
    /// - Parameters:
    ///   - path: A property a ``Column`` of the table maps, or `\.id`.
    ///   - values: The values to match, each bound as a parameter.
    public static func `in`<T: Sendable>(_ path: KeyPath<Row, T> & Sendable, _ values: some Sequence<T>) -> QueryFilter {
        QueryFilter(node: .isIn(.path(path), values.map { .typed($0) }))
    }

    /// Records whose field `field` holds one of `values` (none for an empty list).
    ///
    /// - Parameters:
    ///   - field: The field, by name.
    ///   - values: The values to match, of the field's kind, each bound as a parameter.
    public static func `in`(_ field: QueryField<Row>, _ values: [Value]) -> QueryFilter {
        QueryFilter(node: .isIn(.name(field.name), values.map { .value($0) }))
    }

    /// Records matching both filters.
    public static func && (lhs: QueryFilter, rhs: QueryFilter) -> QueryFilter { QueryFilter(node: .and(lhs.node, rhs.node)) }
    /// Records matching either filter.
    public static func || (lhs: QueryFilter, rhs: QueryFilter) -> QueryFilter { QueryFilter(node: .or(lhs.node, rhs.node)) }
    /// Records not matching the filter.
    public static prefix func ! (filter: QueryFilter) -> QueryFilter { QueryFilter(node: .not(filter.node)) }
}
