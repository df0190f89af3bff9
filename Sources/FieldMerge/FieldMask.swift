/// A set of field positions of one entity (at most ``Entity/maxFields``).
@frozen
public struct FieldMask: Hashable, Sendable, Sequence, CustomStringConvertible {
    public var bits: UInt64

    @inlinable
    public init(bits: UInt64 = 0) { self.bits = bits }

    public init(_ positions: some Sequence<Int>) {
        bits = 0
        for position in positions { insert(position) }
    }

    /// Every position below `count`.
    @inlinable
    public static func all(count: Int) -> FieldMask {
        FieldMask(bits: count >= 64 ? .max : (1 << UInt64(count)) - 1)
    }

    @inlinable public var isEmpty: Bool { bits == 0 }
    @inlinable public var count: Int { bits.nonzeroBitCount }
    @inlinable public func contains(_ position: Int) -> Bool { bits & (1 << UInt64(position)) != 0 }
    @inlinable public mutating func insert(_ position: Int) { bits |= 1 << UInt64(position) }
    @inlinable public mutating func remove(_ position: Int) { bits &= ~(1 << UInt64(position)) }
    @inlinable public func union(_ other: FieldMask) -> FieldMask { FieldMask(bits: bits | other.bits) }

    public struct Iterator: IteratorProtocol {
        var remaining: UInt64
        public mutating func next() -> Int? {
            guard remaining != 0 else { return nil }
            let position = remaining.trailingZeroBitCount
            remaining &= remaining &- 1
            return position
        }
    }

    public func makeIterator() -> Iterator { Iterator(remaining: bits) }

    public var description: String { "[" + map(String.init).joined(separator: ", ") + "]" }
}
