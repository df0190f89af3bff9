/// Which records of each scope a device holds (Specs/scopes.md): the roots of each scope it
/// received in full, by scope name. Requests carry what the device holds (`"scopes"`),
/// responses what it holds once it has applied them; a server without scopes sends none.
///
/// ```json
/// "scopes": {"project": [3, 42], "archive": [], "everything": "*"}
/// ```
public struct ScopeHoldings: Sendable, Hashable {
    /// The roots held, by scope name.
    public var scopes: [String: RootSet]

    public init(_ scopes: [String: RootSet] = [:]) { self.scopes = scopes }

    public subscript(scope: String) -> RootSet? {
        get { scopes[scope] }
        set { scopes[scope] = newValue }
    }

    public var isEmpty: Bool { scopes.isEmpty }
}

/// The roots of one scope: some, by id (ascending, once each), or all of them.
public enum RootSet: Sendable, Hashable {
    /// Every root, and every record of the scope whatever its root (`"*"` on the wire).
    case all
    /// These roots (ascending, without repeats).
    case some([Int64])

    /// No root.
    public static let none = RootSet.some([])

    /// The roots given, sorted and without repeats.
    public static func ids<S: Sequence<Int64>>(_ ids: S) -> RootSet {
        var sorted = Array(ids)
        sorted.sort()
        var unique: [Int64] = []
        unique.reserveCapacity(sorted.count)
        for id in sorted where unique.last != id { unique.append(id) }
        return .some(unique)
    }

    public func contains(_ root: Int64?) -> Bool {
        switch self {
        case .all: return true
        case .some(let ids):
            guard let root else { return false }
            return Self.search(ids, root)
        }
    }

    public var isEmpty: Bool { self == .none }

    /// The roots in `self` and not in `other` (`.all` minus some: every root but those,
    /// written as ``RootFilter/except(_:)``).
    public func subtracting(_ other: RootSet) -> RootFilter {
        switch (self, other) {
        case (_, .all): return .only([])
        case (.all, .some(let ids)): return .except(ids)
        case (.some(let mine), .some(let theirs)): return .only(mine.filter { !Self.search(theirs, $0) })
        }
    }

    /// The roots in both.
    public func intersection(_ other: RootSet) -> RootFilter {
        switch (self, other) {
        case (.all, .all): return .every
        case (.all, .some(let ids)), (.some(let ids), .all): return .only(ids)
        case (.some(let mine), .some(let theirs)): return .only(mine.filter { Self.search(theirs, $0) })
        }
    }

    static func search(_ sorted: [Int64], _ value: Int64) -> Bool {
        var low = 0, high = sorted.count
        while low < high {
            let middle = (low + high) / 2
            if sorted[middle] < value { low = middle + 1 } else { high = middle }
        }
        return low < sorted.count && sorted[low] == value
    }
}

/// Which records of a scoped entity a storage call reads, by their root.
public enum RootFilter: Sendable, Hashable {
    /// Every record, whatever its root (none included).
    case every
    /// Records whose root is one of these (ascending).
    case only([Int64])
    /// Records whose root is none of these, or that have no root.
    case except([Int64])

    /// Whether it selects nothing.
    public var isEmpty: Bool { self == .only([]) }

    public func contains(_ root: Int64?) -> Bool {
        switch self {
        case .every: return true
        case .only(let ids): return root.map { RootSet.search(ids, $0) } ?? false
        case .except(let ids): return root.map { !RootSet.search(ids, $0) } ?? true
        }
    }
}
