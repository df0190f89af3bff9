import FieldMerge

extension Column {
    /// A `RawRepresentable` property with `String` raw values on a `text` field, which
    /// stores the raw value: `.text("status", \.status, default: .open)` for an
    /// `enum Status: String { case open, done }`.
    ///
    /// A stored text that is no raw value of `T` (written by a newer version of the app, or
    /// with plain SQL) fails the read with ``StoreError/Code/invalidRecord``, naming it.
    public static func text<T: RawRepresentable & Sendable>(
        _ name: String, _ path: WritableKeyPath<Row, T> & Sendable, strategy: FieldStrategy? = nil,
        default defaultValue: T? = nil, renamedFrom: String? = nil
    ) -> Column where T.RawValue == String {
        mapped(name, .text, path, strategy: strategy, default: defaultValue, renamedFrom: renamedFrom,
               to: { .text($0.rawValue) }, from: { if case .text(let v) = $0 { T(rawValue: v) } else { nil } },
               mismatch: { notARawValue($0, of: T.self) })
    }

    /// An optional `RawRepresentable` property with `String` raw values on a `text` field;
    /// nil is null.
    public static func text<T: RawRepresentable & Sendable>(
        _ name: String, _ path: WritableKeyPath<Row, T?> & Sendable, strategy: FieldStrategy? = nil,
        default defaultValue: T? = nil, renamedFrom: String? = nil
    ) -> Column where T.RawValue == String {
        mapped(name, .text, path, strategy: strategy, default: defaultValue, renamedFrom: renamedFrom,
               to: { $0.map { .text($0.rawValue) } ?? .null }, from: {
                   switch $0 {
                   case .text(let v): T(rawValue: v).map { .some($0) }
                   case .null: .some(nil)
                   default: nil
                   }
               }, mismatch: { notARawValue($0, of: T.self) })
    }

    /// A `RawRepresentable` property with integer raw values on an `integer` field, which
    /// stores the raw value (raw values must fit `Int64`). A stored integer that is no raw
    /// value of `T` (or does not fit `T.RawValue`) fails the read with
    /// ``StoreError/Code/invalidRecord``.
    public static func integer<T: RawRepresentable & Sendable>(
        _ name: String, _ path: WritableKeyPath<Row, T> & Sendable, strategy: FieldStrategy? = nil,
        default defaultValue: T? = nil, renamedFrom: String? = nil
    ) -> Column where T.RawValue: FixedWidthInteger {
        mapped(name, .integer, path, strategy: strategy, default: defaultValue, renamedFrom: renamedFrom,
               to: { .integer(Int64(truncatingIfNeeded: $0.rawValue)) }, from: {
                   guard case .integer(let v) = $0, let raw = T.RawValue(exactly: v) else { return nil }
                   return T(rawValue: raw)
               }, mismatch: { notARawValue($0, of: T.self) })
    }

    private static func notARawValue<T>(_ value: Value, of type: T.Type) -> String {
        switch value {
        case .text(let v): "'\(v)', which is not a raw value of \(T.self)"
        case .integer(let v): "\(v), which is not a raw value of \(T.self)"
        default: "\(value.kind.rawValue), which \(T.self) cannot take"
        }
    }
}
