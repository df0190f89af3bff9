import Foundation

extension JSONValue {
    /// Where `self` (an actual document) disagrees with `expected`: objects match when every
    /// key of `expected` matches (extra keys in `self` are allowed), arrays element-wise
    /// with equal lengths, numbers by value (but -0.0 only with -0.0), everything else exactly. Empty when it matches.
    public func mismatches(against expected: JSONValue, path: String = "$") -> [String] {
        switch (self, expected) {
        case let (.object(actual), .object(wanted)):
            return wanted.keys.sorted().flatMap { key -> [String] in
                guard let value = actual[key] else { return ["\(path).\(key): missing"] }
                return value.mismatches(against: wanted[key]!, path: "\(path).\(key)")
            }
        case let (.array(actual), .array(wanted)):
            guard actual.count == wanted.count else {
                return ["\(path): \(actual.count) elements, expected \(wanted.count)"]
            }
            return zip(actual, wanted).enumerated().flatMap { offset, pair in
                pair.0.mismatches(against: pair.1, path: "\(path)[\(offset)]")
            }
        case let (.integer(a), .number(b)), let (.number(b), .integer(a)):
            return Double(a) == b && b.sign == .plus ? [] : ["\(path): \(a), expected \(b)"]
        case let (.number(a), .number(b)):
            // Equal as numbers, and a negative zero matches only a negative zero.
            return a == b && a.sign == b.sign ? [] : ["\(path): \(a), expected \(b)"]
        default:
            return self == expected ? [] : ["\(path): \(self.compact), expected \(expected.compact)"]
        }
    }

    var compact: String {
        rendered().split(separator: "\n").map { $0.trimmingCharacters(in: .whitespaces) }.joined(separator: " ")
    }
}
