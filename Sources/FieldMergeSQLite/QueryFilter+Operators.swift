import FieldMerge

// Comparisons of a column with a value, for ``QueryFilter``. The value is bound as a
// parameter: `\.title == "x'); DROP TABLE notes; --"` matches that title verbatim.

/// Records whose column at `lhs` equals `rhs` (converted as the column stores it).
public func == <Row, T: Sendable>(lhs: KeyPath<Row, T> & Sendable, rhs: T) -> QueryFilter<Row> {
    QueryFilter(node: .compare(.path(lhs), .equal, .typed(rhs)))
}

/// Records whose column at `lhs` differs from `rhs` (converted as the column stores it).
public func != <Row, T: Sendable>(lhs: KeyPath<Row, T> & Sendable, rhs: T) -> QueryFilter<Row> {
    QueryFilter(node: .compare(.path(lhs), .notEqual, .typed(rhs)))
}

/// Records whose column at `lhs` is less than `rhs` (converted as the column stores it).
public func < <Row, T: Sendable>(lhs: KeyPath<Row, T> & Sendable, rhs: T) -> QueryFilter<Row> {
    QueryFilter(node: .compare(.path(lhs), .less, .typed(rhs)))
}

/// Records whose column at `lhs` is at most `rhs` (converted as the column stores it).
public func <= <Row, T: Sendable>(lhs: KeyPath<Row, T> & Sendable, rhs: T) -> QueryFilter<Row> {
    QueryFilter(node: .compare(.path(lhs), .lessOrEqual, .typed(rhs)))
}

/// Records whose column at `lhs` is greater than `rhs` (converted as the column stores it).
public func > <Row, T: Sendable>(lhs: KeyPath<Row, T> & Sendable, rhs: T) -> QueryFilter<Row> {
    QueryFilter(node: .compare(.path(lhs), .greater, .typed(rhs)))
}

/// Records whose column at `lhs` is at least `rhs` (converted as the column stores it).
public func >= <Row, T: Sendable>(lhs: KeyPath<Row, T> & Sendable, rhs: T) -> QueryFilter<Row> {
    QueryFilter(node: .compare(.path(lhs), .greaterOrEqual, .typed(rhs)))
}

extension QueryField {
    /// Records whose field equals `rhs`, a value of the field's kind.
    public static func == (lhs: QueryField, rhs: Value) -> QueryFilter<Row> {
        QueryFilter(node: .compare(.name(lhs.name), .equal, .value(rhs)))
    }

    /// Records whose field differs from `rhs`, a value of the field's kind.
    public static func != (lhs: QueryField, rhs: Value) -> QueryFilter<Row> {
        QueryFilter(node: .compare(.name(lhs.name), .notEqual, .value(rhs)))
    }

    /// Records whose field is less than `rhs`, a value of the field's kind.
    public static func < (lhs: QueryField, rhs: Value) -> QueryFilter<Row> {
        QueryFilter(node: .compare(.name(lhs.name), .less, .value(rhs)))
    }

    /// Records whose field is at most `rhs`, a value of the field's kind.
    public static func <= (lhs: QueryField, rhs: Value) -> QueryFilter<Row> {
        QueryFilter(node: .compare(.name(lhs.name), .lessOrEqual, .value(rhs)))
    }

    /// Records whose field is greater than `rhs`, a value of the field's kind.
    public static func > (lhs: QueryField, rhs: Value) -> QueryFilter<Row> {
        QueryFilter(node: .compare(.name(lhs.name), .greater, .value(rhs)))
    }

    /// Records whose field is at least `rhs`, a value of the field's kind.
    public static func >= (lhs: QueryField, rhs: Value) -> QueryFilter<Row> {
        QueryFilter(node: .compare(.name(lhs.name), .greaterOrEqual, .value(rhs)))
    }

}
