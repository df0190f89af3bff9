/// One field's value.
///
/// The schema's ``FieldType`` says which case a field holds; every field may also be
/// ``null``. References hold the referenced record's id as an ``integer(_:)``; dates are
/// milliseconds since the Unix epoch (UTC). Equality is exact, so that every replica decides
/// alike: reals by bit pattern (NaN equals itself, -0 differs from 0), text by its UTF-8
/// bytes (a precomposed "é" differs from "e" + combining accent, as their bytes do).
@frozen
public enum Value: Hashable, Sendable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case bool(Bool)
    /// Milliseconds since 1970-01-01T00:00:00Z.
    case date(Int64)
    case blob([UInt8])
    case textSet(TextSet)

    @inlinable
    public static func == (lhs: Value, rhs: Value) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): return true
        case let (.integer(a), .integer(b)): return a == b
        case let (.real(a), .real(b)): return a.bitPattern == b.bitPattern
        case let (.text(a), .text(b)): return sameBytes(a, b)
        case let (.bool(a), .bool(b)): return a == b
        case let (.date(a), .date(b)): return a == b
        case let (.blob(a), .blob(b)): return a == b
        case let (.textSet(a), .textSet(b)): return a == b
        default: return false
        }
    }

    /// Byte equality of two strings: lengths first (O(1) for native strings), then the
    /// contiguous UTF-8 storage compared directly.
    @usableFromInline
    static func sameBytes(_ a: String, _ b: String) -> Bool {
        guard a.utf8.count == b.utf8.count else { return false }
        let fast = a.utf8.withContiguousStorageIfAvailable { left in
            b.utf8.withContiguousStorageIfAvailable { right in left.elementsEqual(right) }
        }
        return (fast ?? nil) ?? a.utf8.elementsEqual(b.utf8)
    }

    public func hash(into hasher: inout Hasher) {
        switch self {
        case .null: hasher.combine(0 as UInt8)
        case .integer(let v): hasher.combine(1 as UInt8); hasher.combine(v)
        case .real(let v): hasher.combine(2 as UInt8); hasher.combine(v.bitPattern)
        case .text(let v): hasher.combine(3 as UInt8); for byte in v.utf8 { hasher.combine(byte) }
        case .bool(let v): hasher.combine(4 as UInt8); hasher.combine(v)
        case .date(let v): hasher.combine(5 as UInt8); hasher.combine(v)
        case .blob(let v): hasher.combine(6 as UInt8); hasher.combine(v)
        case .textSet(let v): hasher.combine(7 as UInt8); hasher.combine(v)
        }
    }

    /// Whether this is ``null``.
    @inlinable
    public var isNull: Bool { if case .null = self { return true } else { return false } }

    /// The kind of value, for error messages and type checks.
    public var kind: ValueKind {
        switch self {
        case .null: return .null
        case .integer: return .integer
        case .real: return .real
        case .text: return .text
        case .bool: return .bool
        case .date: return .date
        case .blob: return .blob
        case .textSet: return .textSet
        }
    }

    /// Whether a value of this kind may be stored in a field of `type`.
    public func fits(_ type: FieldType) -> Bool {
        let kind = self.kind
        return kind == .null || kind == type.valueKind
    }
}

/// The case of a ``Value``, without its payload.
public enum ValueKind: String, Sendable, CaseIterable {
    case null, integer, real, text, bool, date, blob, textSet
}

extension Value {
    /// A total order used by the `max` and `min` strategies: `null` first, then by kind in
    /// declaration order, then by the natural order of the payload (reals by IEEE-754 total
    /// order, text by Unicode scalar values, blobs and sets lexicographically).
    public static func precedes(_ lhs: Value, _ rhs: Value) -> Bool {
        switch (lhs, rhs) {
        case let (.integer(a), .integer(b)): return a < b
        case let (.real(a), .real(b)): return a.isTotallyOrdered(belowOrEqualTo: b) && a.bitPattern != b.bitPattern
        case let (.text(a), .text(b)): return a.unicodeScalars.lexicographicallyPrecedes(b.unicodeScalars)
        case let (.bool(a), .bool(b)): return !a && b
        case let (.date(a), .date(b)): return a < b
        case let (.blob(a), .blob(b)): return a.lexicographicallyPrecedes(b)
        case let (.textSet(a), .textSet(b)):
            return a.elements.lexicographicallyPrecedes(b.elements) {
                $0.unicodeScalars.lexicographicallyPrecedes($1.unicodeScalars)
            }
        default: return lhs.kindRank < rhs.kindRank
        }
    }

    private var kindRank: Int {
        switch self {
        case .null: return 0
        case .integer: return 1
        case .real: return 2
        case .text: return 3
        case .bool: return 4
        case .date: return 5
        case .blob: return 6
        case .textSet: return 7
        }
    }
}

extension Value: CustomStringConvertible {
    public var description: String {
        switch self {
        case .null: return "null"
        case .integer(let v): return String(v)
        case .real(let v): return String(v)
        case .text(let v): return "\"\(v)\""
        case .bool(let v): return v ? "true" : "false"
        case .date(let v): return "date(\(v))"
        case .blob(let v): return "blob(\(v.count) bytes)"
        case .textSet(let v): return "{" + v.elements.map { "\"\($0)\"" }.joined(separator: ", ") + "}"
        }
    }
}

extension Value: ExpressibleByNilLiteral, ExpressibleByIntegerLiteral, ExpressibleByFloatLiteral,
    ExpressibleByStringLiteral, ExpressibleByBooleanLiteral
{
    public init(nilLiteral: ()) { self = .null }
    public init(integerLiteral value: Int64) { self = .integer(value) }
    public init(floatLiteral value: Double) { self = .real(value) }
    public init(stringLiteral value: String) { self = .text(value) }
    public init(booleanLiteral value: Bool) { self = .bool(value) }
}
