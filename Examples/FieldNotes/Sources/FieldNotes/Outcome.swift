/// The checks of the example: each prints its result, and a failed one is kept so that the
/// program exits with code 1.
struct Outcome {
    private(set) var failures: [String] = []

    mutating func expect<T: Equatable>(_ actual: T?, _ expected: T, _ check: String) {
        let shown = actual.map(Self.oneLine) ?? "nothing"
        guard actual == expected else {
            print("  FAIL \(check): \(shown), expected \(Self.oneLine(expected))")
            failures.append(check)
            return
        }
        print("  ok   \(check): \(shown)")
    }

    /// `value` on one line: a text's line breaks shown as " / ".
    private static func oneLine(_ value: some Any) -> String {
        "\(value)".split(separator: "\n", omittingEmptySubsequences: false).joined(separator: " / ")
    }
}
