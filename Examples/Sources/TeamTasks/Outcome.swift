/// What the example expects; anything else is reported and makes it exit with code 1.
struct Outcome {
    private(set) var failures: [String] = []

    mutating func expect<T: Equatable>(_ actual: T, _ expected: T, _ what: String) {
        if actual == expected {
            print("  ok   \(what): \(Self.show(actual))")
        } else {
            print("  FAIL \(what): \(Self.show(actual)), expected \(Self.show(expected))")
            failures.append(what)
        }
    }

    /// `value`, an optional one without `Optional(…)` around it.
    private static func show(_ value: Any) -> String {
        let mirror = Mirror(reflecting: value)
        guard mirror.displayStyle == .optional else { return "\(value)" }
        return mirror.children.first.map { show($0.value) } ?? "nil"
    }
}
