/// The three versions of one field that a strategy decides between.
public struct FieldMergeInput: Sendable {
    /// The entity's name.
    public var entity: String
    /// The record's id.
    public var id: Int64
    /// The field being merged.
    public var field: Field
    /// The server-acknowledged value, or nil when the record has no ancestor.
    public var ancestor: Value?
    public var ancestorStamp: Stamp
    /// This replica's value.
    public var local: Value
    public var localStamp: Stamp
    /// The server's value.
    public var remote: Value
    public var remoteStamp: Stamp

    public init(
        entity: String, id: Int64, field: Field, ancestor: Value?, ancestorStamp: Stamp,
        local: Value, localStamp: Stamp, remote: Value, remoteStamp: Stamp
    ) {
        self.entity = entity
        self.id = id
        self.field = field
        self.ancestor = ancestor
        self.ancestorStamp = ancestorStamp
        self.local = local
        self.localStamp = localStamp
        self.remote = remote
        self.remoteStamp = remoteStamp
    }

    /// The value with the larger stamp (the `lastEditWins` answer).
    public var lastEdit: Value { localStamp > remoteStamp ? local : remote }
}

/// A field strategy written by an app: decides a field that both sides changed to
/// different values. It must be deterministic: the same input always gives the same value.
public protocol FieldMergeStrategy: Sendable {
    /// A stable name, shown in conflict reports.
    var name: String { get }
    /// The merged value.
    func merge(_ input: FieldMergeInput) -> Value
}

/// A field strategy made from a closure.
public struct ClosureFieldStrategy: FieldMergeStrategy {
    public let name: String
    private let body: @Sendable (FieldMergeInput) -> Value

    public init(name: String, _ body: @escaping @Sendable (FieldMergeInput) -> Value) {
        self.name = name
        self.body = body
    }

    public func merge(_ input: FieldMergeInput) -> Value { body(input) }
}

/// How a field that both sides changed to different values is decided.
public enum FieldStrategy: Sendable, CustomStringConvertible {
    /// The larger stamp wins (the default).
    case lastEditWins
    /// The server's (remote) value wins.
    case serverWins
    /// This replica's (local) value wins.
    case clientWins
    /// The larger value by ``Value/precedes(_:_:)``; null is smallest.
    case max
    /// The smaller value; null is smallest.
    case min
    /// Numbers: A + (L - A) + (R - A), so concurrent increments both count.
    case counter
    /// Sets: (L ∪ R) minus what either side removed relative to the ancestor.
    case union
    /// Text: line-based three-way merge; overlapping edits, and diffs over
    /// ``LineMerge/editBudget``, fall back to ``lastEditWins``.
    case text
    /// App code decides.
    case custom(any FieldMergeStrategy)

    /// A custom strategy made from a closure.
    public static func custom(
        _ name: String, _ body: @escaping @Sendable (FieldMergeInput) -> Value
    ) -> FieldStrategy {
        .custom(ClosureFieldStrategy(name: name, body))
    }

    /// The strategy's name as used in conflict reports and documents.
    public var name: String {
        switch self {
        case .lastEditWins: return "lastEditWins"
        case .serverWins: return "serverWins"
        case .clientWins: return "clientWins"
        case .max: return "max"
        case .min: return "min"
        case .counter: return "counter"
        case .union: return "union"
        case .text: return "text"
        case .custom(let strategy): return strategy.name
        }
    }

    public var description: String { name }

    /// The built-in strategy with this name, or nil.
    public init?(builtIn name: String) {
        switch name {
        case "lastEditWins": self = .lastEditWins
        case "serverWins": self = .serverWins
        case "clientWins": self = .clientWins
        case "max": self = .max
        case "min": self = .min
        case "counter": self = .counter
        case "union": self = .union
        case "text": self = .text
        default: return nil
        }
    }

    /// Whether two distinct edits (different stamps) to the same value still go to the
    /// strategy: true for ``counter``, where 4 → 5 on both sides means two increments, 6.
    @inlinable
    public var sumsEqualEdits: Bool {
        if case .counter = self { return true }
        return false
    }

    /// Whether the strategy can decide a field of this type.
    public func applies(to type: FieldType) -> Bool {
        switch self {
        case .counter: return type == .integer || type == .real
        case .union: return type == .textSet
        case .text: return type == .text
        case .max, .min: return type != .textSet
        case .lastEditWins, .serverWins, .clientWins, .custom: return true
        }
    }
}

/// The whole triple of one record, and the field-wise proposal, for a record-level rule.
public struct RecordMergeInput: Sendable {
    public var entity: Entity
    /// The ancestor, or nil when the record was never acknowledged here.
    public var ancestor: Record?
    public var local: Record
    public var remote: Record
    /// The values the field strategies chose, in schema order.
    public var proposal: ContiguousArray<Value>

    /// An input built by hand: to unit-test a record rule without running a merge.
    public init(entity: Entity, ancestor: Record?, local: Record, remote: Record, proposal: ContiguousArray<Value>) {
        self.entity = entity
        self.ancestor = ancestor
        self.local = local
        self.remote = remote
        self.proposal = proposal
    }
}

/// A record-level strategy written by an app, for rules across fields ("status done
/// implies completedAt set"). It sees the triple and the field-wise proposal and returns
/// the final values in schema order. It runs when both sides changed the record.
/// It must be deterministic.
public protocol RecordMergeStrategy: Sendable {
    var name: String { get }
    func merge(_ input: RecordMergeInput) -> ContiguousArray<Value>
}

/// A record-level strategy made from a closure.
public struct ClosureRecordStrategy: RecordMergeStrategy {
    public let name: String
    private let body: @Sendable (RecordMergeInput) -> ContiguousArray<Value>

    public init(name: String, _ body: @escaping @Sendable (RecordMergeInput) -> ContiguousArray<Value>) {
        self.name = name
        self.body = body
    }

    public func merge(_ input: RecordMergeInput) -> ContiguousArray<Value> { body(input) }
}
