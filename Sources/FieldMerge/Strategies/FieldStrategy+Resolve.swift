extension FieldStrategy {
    /// The value this strategy gives a field that both sides changed to different values.
    public func resolve(_ input: FieldMergeInput) -> Value {
        decide(input).value
    }

    /// The value, and why a fallback decided it instead of this strategy's own rule (nil
    /// when the rule itself decided, or when a conflict of the rule let `lastEditWins` decide).
    func decide(_ input: FieldMergeInput) -> (value: Value, fallback: MergeFallback?) {
        if case .text = self {
            switch TextMerge.merge(input) {
            case .merged(let text)?: return (.text(text), nil)
            case .editBudgetExhausted?: return (input.lastEdit, .editBudgetExhausted)
            case .conflict?, nil: return (input.lastEdit, nil)
            }
        }
        return (resolveByRule(input), nil)
    }

    private func resolveByRule(_ input: FieldMergeInput) -> Value {
        switch self {
        case .lastEditWins: return input.lastEdit
        case .serverWins: return input.remote
        case .clientWins: return input.local
        case .max: return Value.precedes(input.local, input.remote) ? input.remote : input.local
        case .min: return Value.precedes(input.local, input.remote) ? input.local : input.remote
        case .counter: return CounterMerge.merge(input) ?? input.lastEdit
        case .union: return SetUnionMerge.merge(input) ?? input.lastEdit
        case .text: return input.lastEdit  // decided in `decide`
        case .custom(let strategy): return strategy.merge(input)
        }
    }
}

/// `counter`: the ancestor plus both sides' increments.
enum CounterMerge {
    /// A + (L - A) + (R - A), with wrapping integer arithmetic; nil when a value is not a
    /// number of the same kind or there is no ancestor to count increments from.
    static func merge(_ input: FieldMergeInput) -> Value? {
        switch (input.ancestor, input.local, input.remote) {
        case let (.integer(a)?, .integer(l), .integer(r)):
            return .integer(l &+ r &- a)
        case let (.real(a)?, .real(l), .real(r)):
            // Sum the increments first: IEEE addition commutes, so the result is symmetric.
            return .real(a + ((l - a) + (r - a)))
        default:
            return nil
        }
    }
}

/// `union`: both sides' additions survive, and so do both sides' removals.
enum SetUnionMerge {
    /// (L ∪ R) minus what either side removed relative to A; null counts as the empty set,
    /// and without an ancestor nothing counts as removed. Nil for values that are not sets.
    static func merge(_ input: FieldMergeInput) -> Value? {
        guard let local = set(input.local), let remote = set(input.remote) else { return nil }
        guard let ancestorValue = input.ancestor else { return .textSet(local.union(remote)) }
        guard let ancestor = set(ancestorValue) else { return nil }
        let removed = ancestor.subtracting(local).union(ancestor.subtracting(remote))
        return .textSet(local.union(remote).subtracting(removed))
    }

    private static func set(_ value: Value) -> TextSet? {
        switch value {
        case .textSet(let set): return set
        case .null: return TextSet()
        default: return nil
        }
    }
}

/// `text`: a line-based three-way merge.
enum TextMerge {
    /// The diff3 merge of the three texts; nil when a value is not text, or when there is
    /// no ancestor.
    static func merge(_ input: FieldMergeInput) -> LineMerge.Outcome? {
        guard case .text(let ancestor)? = input.ancestor, case .text(let local) = input.local,
            case .text(let remote) = input.remote
        else { return nil }
        return LineMerge.outcome(ancestor: ancestor, local: local, remote: remote)
    }
}
