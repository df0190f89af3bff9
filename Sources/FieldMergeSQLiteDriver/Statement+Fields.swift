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
        if isNull(column) { return .null }
        switch (type, value(column)) {
        case (.integer, .integer(let v)), (.reference, .integer(let v)): return .integer(v)
        case (.date, .integer(let v)): return .date(v)
        case (.bool, .integer(let v)) where v == 0 || v == 1: return .bool(v == 1)
        case (.real, .real(let v)): return .real(v)
        case (.real, .integer(let v)): return .real(Double(v))
        case (.text, .text(let v)), (.attachment, .text(let v)): return .text(v)
        case (.blob, .blob(let v)): return .blob(v)
        case (.textSet, .text(let v)): return TextSetJSON.decode(v).map(Value.textSet)
        default: return nil
        }
    }
}
