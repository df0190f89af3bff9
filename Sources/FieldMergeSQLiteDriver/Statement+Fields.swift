import CSQLite
import FieldMerge

/// How a FieldMerge table's column holds a field's value, for the device's store and the
/// server's SQLite storage alike.
extension Statement {
    /// Binds a field value at `index` as a FieldMerge column stores it: bools as 0/1, dates
    /// as integer milliseconds, text sets as a JSON array of strings.
    public func bindField(_ value: Value, at index: Int32) throws(SQLiteError) {
        switch value {
        case .null: try bindNull(at: index)
        case .integer(let v), .date(let v): try bind(v, at: index)
        case .real(let v): try bind(v, at: index)
        case .text(let v): try bind(v, at: index)
        case .bool(let v): try bind(v ? 1 as Int64 : 0, at: index)
        case .blob(let v): try bind(v, at: index)
        case .textSet(let v): try bind(TextSetJSON.encode(v), at: index)
        }
    }

    /// Reads column `column` as a value of `type`; nil when the stored value does not fit
    /// (a row written by hand with the wrong type).
    public func value(_ column: Int32, as type: FieldType) -> Value? {
        value(column, as: type.valueKind)
    }

    /// ``value(_:as:)`` by the field's ``ValueKind`` (`FieldType/valueKind`), which tables
    /// work out once: a `FieldType` copied per row and field (a reference's target is a
    /// string) costs a retain and a release each.
    public func value(_ column: Int32, as kind: ValueKind) -> Value? {
        switch sqlite3_column_type(handle, column) {
        case SQLITE_NULL: return .null
        case SQLITE_INTEGER:
            let v = int64(column)
            switch kind {
            case .integer: return .integer(v)
            case .date: return .date(v)
            case .bool: return v == 0 || v == 1 ? .bool(v == 1) : nil
            case .real: return .real(Double(v))
            default: return nil
            }
        case SQLITE_FLOAT: return kind == .real ? .real(double(column)) : nil
        case SQLITE_TEXT:
            switch kind {
            case .text: return .text(text(column))
            case .textSet: return TextSetJSON.decode(text(column)).map(Value.textSet)
            default: return nil
            }
        case SQLITE_BLOB: return kind == .blob ? .blob(blob(column)) : nil
        default: return nil
        }
    }
}
