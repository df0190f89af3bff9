/// One SQLite value, as stored in a column or bound to a parameter.
///
/// The cases are SQLite's five storage classes. Values are always bound to statements,
/// never spliced into SQL text.
///
/// SQLite stores a `Double.nan` as `NULL`: binding ``real(_:)`` with NaN reads back as
/// ``null``.
public enum SQLValue: Hashable, Sendable {
    /// SQL `NULL`.
    case null
    /// A 64-bit signed integer (storage class `INTEGER`).
    case integer(Int64)
    /// An IEEE 754 double (storage class `REAL`).
    case real(Double)
    /// UTF-8 text (storage class `TEXT`); may contain NUL characters.
    case text(String)
    /// Bytes (storage class `BLOB`). An empty array is an empty blob, which is not `NULL`.
    case blob([UInt8])
}
