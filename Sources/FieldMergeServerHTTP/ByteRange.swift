/// The one range of a `Range: bytes=…` header that downloads honour (RFC 9110, 14.2).
enum ByteRange: Equatable {
    /// No range, or one the server ignores (several ranges, another unit, bad syntax):
    /// the whole attachment, 200.
    case whole
    /// The bytes `lowerBound ..< upperBound`, 206.
    case part(Range<Int64>)
    /// A range that starts past the end: 416.
    case unsatisfiable

    /// The range `header` asks for in `size` bytes.
    init(_ header: String?, size: Int64) {
        guard let header, header.hasPrefix("bytes="), !header.contains(",") else {
            self = .whole
            return
        }
        let spec = header.dropFirst("bytes=".count).filter { $0 != " " }
        let sides = spec.split(separator: "-", maxSplits: 1, omittingEmptySubsequences: false)
        guard sides.count == 2 else {
            self = .whole
            return
        }
        let first = Self.number(sides[0]), last = Self.number(sides[1])
        switch (sides[0].isEmpty, sides[1].isEmpty) {
        case (true, false):
            // The last `n` bytes.
            guard let count = last else { self = .whole; return }
            guard count > 0, size > 0 else { self = .unsatisfiable; return }
            self = .part(max(0, size - count)..<size)
        case (false, _):
            guard let start = first, sides[1].isEmpty || last != nil else { self = .whole; return }
            if let last, last < start { self = .whole; return }
            guard start < size else { self = .unsatisfiable; return }
            self = .part(start..<min(size, (last ?? Int64.max - 1) + 1))
        case (true, true):
            self = .whole
        }
    }

    private static func number(_ digits: Substring) -> Int64? {
        guard !digits.isEmpty, digits.count <= 18, digits.allSatisfy({ $0.isASCII && $0.isNumber }) else { return nil }
        return Int64(digits)
    }
}
