/// A set of strings kept sorted and unique (by Unicode scalars, not canonical equivalence), so that equal sets are equal arrays and every
/// replica serialises them identically.
public struct TextSet: Hashable, Sendable, ExpressibleByArrayLiteral, Sequence {
    /// The members in ascending order of Unicode scalar values.
    public private(set) var elements: [String]

    public init(_ members: some Sequence<String>) {
        var sorted = Array(members)
        sorted.sort(by: Self.precedes)
        var unique: [String] = []
        unique.reserveCapacity(sorted.count)
        for member in sorted where !(unique.last.map { Self.same($0, member) } ?? false) {
            unique.append(member)
        }
        elements = unique
    }

    public init(arrayLiteral members: String...) { self.init(members) }

    public static func == (lhs: TextSet, rhs: TextSet) -> Bool {
        lhs.elements.elementsEqual(rhs.elements, by: same)
    }

    public func hash(into hasher: inout Hasher) {
        hasher.combine(elements.count)
        for member in elements { for byte in member.utf8 { hasher.combine(byte) } }
    }

    public var count: Int { elements.count }
    public var isEmpty: Bool { elements.isEmpty }
    public func makeIterator() -> IndexingIterator<[String]> { elements.makeIterator() }

    public func contains(_ member: String) -> Bool { index(of: member).found }

    public mutating func insert(_ member: String) {
        let (at, found) = index(of: member)
        if !found { elements.insert(member, at: at) }
    }

    public mutating func remove(_ member: String) {
        let (at, found) = index(of: member)
        if found { elements.remove(at: at) }
    }

    public func union(_ other: TextSet) -> TextSet { TextSet(elements + other.elements) }
    public func subtracting(_ other: TextSet) -> TextSet { TextSet(elements.filter { !other.contains($0) }) }

    static func precedes(_ a: String, _ b: String) -> Bool {
        a.unicodeScalars.lexicographicallyPrecedes(b.unicodeScalars)
    }

    static func same(_ a: String, _ b: String) -> Bool {
        a.utf8.elementsEqual(b.utf8)
    }

    private func index(of member: String) -> (Int, found: Bool) {
        var low = 0, high = elements.count
        while low < high {
            let mid = (low + high) / 2
            if Self.precedes(elements[mid], member) { low = mid + 1 } else { high = mid }
        }
        return (low, low < elements.count && Self.same(elements[low], member))
    }
}
