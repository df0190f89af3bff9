/// Strings: a fast path for runs of plain ASCII eight bytes at a time, UTF-8 validated as
/// read (invalid UTF-8 is `malformedJSON`: the body is not JSON text), escapes decoded into
/// the scratch buffer (`\uXXXX` with surrogate pairs; a lone surrogate is `invalidValue`).
extension _Parser {
    /// Reads a string whose opening quote is at `position`.
    @inline(__always)
    mutating func string() throws(WireError) -> _Span {
        let quote = position
        var index = position &+ 1
        let raw = UnsafeRawPointer(input)
        while true {
            while index &+ 8 <= end,
                !_swarSpecial(raw.loadUnaligned(fromByteOffset: index, as: UInt64.self), highBit: true)
            {
                index &+= 8
            }
            guard index < end else { position = end; throw truncated() }
            let byte = input[index]
            if byte == UInt8(ascii: "\"") {
                position = index &+ 1
                return _Span(start: input + quote + 1, count: index &- quote &- 1, offset: quote)
            } else if byte == UInt8(ascii: "\\") {
                return try escapedString(quote: quote, escapeAt: index)
            } else if byte >= 0x80 {
                index &+= try utf8Sequence(at: index)
            } else if byte < 0x20 {
                throw error(.malformedJSON, "control character 0x\(String(byte, radix: 16)) in a string must be escaped", at: index)
            } else {
                index &+= 1
            }
        }
    }

    /// The length of the valid UTF-8 sequence starting at `index` (Unicode 3-7).
    @inline(__always)
    func utf8Sequence(at index: Int) throws(WireError) -> Int {
        let lead = input[index]
        let length: Int
        var low: UInt8 = 0x80, high: UInt8 = 0xBF
        switch lead {
        case 0xC2...0xDF: length = 2
        case 0xE0: length = 3; low = 0xA0
        case 0xE1...0xEC, 0xEE...0xEF: length = 3
        case 0xED: length = 3; high = 0x9F
        case 0xF0: length = 4; low = 0x90
        case 0xF1...0xF3: length = 4
        case 0xF4: length = 4; high = 0x8F
        default: throw error(.malformedJSON, "invalid UTF-8 byte 0x\(String(lead, radix: 16))", at: index)
        }
        guard index &+ length <= end else { throw truncated() }
        let second = input[index &+ 1]
        guard second >= low, second <= high else {
            throw error(.malformedJSON, "invalid UTF-8 sequence", at: index)
        }
        for offset in 2..<length where input[index &+ offset] & 0xC0 != 0x80 {
            throw error(.malformedJSON, "invalid UTF-8 sequence", at: index)
        }
        return length
    }

    @inline(__always)
    mutating func ensureScratch(_ needed: Int) {
        if needed > scratchCapacity { growScratch(needed) }
    }

    @inline(never)
    mutating func growScratch(_ needed: Int) {
        let capacity = max(needed, scratchCapacity * 2)
        let grown = UnsafeMutablePointer<UInt8>.allocate(capacity: capacity)
        grown.initialize(from: scratch, count: scratchCapacity)
        scratch.deallocate()
        scratch = grown
        scratchCapacity = capacity
    }

    /// The slow path: the string has escapes. Its content is decoded into `scratch`.
    @inline(never)
    mutating func escapedString(quote: Int, escapeAt: Int) throws(WireError) -> _Span {
        var length = escapeAt &- quote &- 1
        ensureScratch(length &+ 64)
        scratch.initialize(from: input + quote + 1, count: length)
        var index = escapeAt
        while true {
            guard index < end else { position = end; throw truncated() }
            let byte = input[index]
            ensureScratch(length &+ 8)
            if byte == UInt8(ascii: "\"") {
                position = index &+ 1
                return _Span(start: UnsafePointer(scratch), count: length, offset: quote)
            } else if byte == UInt8(ascii: "\\") {
                guard index &+ 1 < end else { position = end; throw truncated() }
                let escaped = input[index &+ 1]
                var decoded: UInt8 = 0
                switch escaped {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): decoded = escaped
                case UInt8(ascii: "b"): decoded = 0x08
                case UInt8(ascii: "f"): decoded = 0x0C
                case UInt8(ascii: "n"): decoded = 0x0A
                case UInt8(ascii: "r"): decoded = 0x0D
                case UInt8(ascii: "t"): decoded = 0x09
                case UInt8(ascii: "u"):
                    let scalar = try unicodeEscape(at: index)
                    index = scalar.next
                    length = appendUTF8(scalar.value, at: length)
                    continue
                default:
                    throw error(.malformedJSON, "invalid escape '\\\(Character(Unicode.Scalar(escaped)))'", at: index)
                }
                scratch[length] = decoded
                length &+= 1
                index &+= 2
            } else if byte >= 0x80 {
                let sequence = try utf8Sequence(at: index)
                for offset in 0..<sequence { scratch[length &+ offset] = input[index &+ offset] }
                length &+= sequence
                index &+= sequence
            } else if byte < 0x20 {
                throw error(.malformedJSON, "control character 0x\(String(byte, radix: 16)) in a string must be escaped", at: index)
            } else {
                scratch[length] = byte
                length &+= 1
                index &+= 1
            }
        }
    }

    /// Decodes `\uXXXX` at `index` (and its low surrogate, for a high one).
    private func unicodeEscape(at index: Int) throws(WireError) -> (value: UInt32, next: Int) {
        let high = try hex4(at: index &+ 2)
        switch high {
        case 0xD800...0xDBFF:
            let lone = error(.invalidValue, "lone high surrogate \\u\(String(high, radix: 16)) in a string", at: index)
            guard index &+ 6 < end else { throw truncated() }
            guard input[index &+ 6] == UInt8(ascii: "\\") else { throw lone }
            guard index &+ 7 < end else { throw truncated() }
            guard input[index &+ 7] == UInt8(ascii: "u") else { throw lone }
            let low = try hex4(at: index &+ 8)
            guard (0xDC00...0xDFFF).contains(low) else { throw lone }
            return (0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00), index &+ 12)
        case 0xDC00...0xDFFF:
            throw error(.invalidValue, "lone low surrogate \\u\(String(high, radix: 16)) in a string", at: index)
        default:
            return (high, index &+ 6)
        }
    }

    private func isHex(_ byte: UInt8) -> Bool {
        (48...57).contains(byte) || (65...70).contains(byte) || (97...102).contains(byte)
    }

    private func hex4(at index: Int) throws(WireError) -> UInt32 {
        guard index &+ 4 <= end else {
            for offset in index..<end where !isHex(input[offset]) {
                throw error(.malformedJSON, "expected 4 hex digits after \\u", at: index &- 2)
            }
            throw truncated()
        }
        var value: UInt32 = 0
        for offset in 0..<4 {
            let byte = input[index &+ offset]
            let digit: UInt8
            switch byte {
            case 48...57: digit = byte - 48
            case 65...70: digit = byte - 55
            case 97...102: digit = byte - 87
            default: throw error(.malformedJSON, "expected 4 hex digits after \\u", at: index &- 2)
            }
            value = value << 4 | UInt32(digit)
        }
        return value
    }

    /// Writes a scalar's UTF-8 into `scratch` at `length`; returns the new length.
    private func appendUTF8(_ value: UInt32, at length: Int) -> Int {
        switch value {
        case 0..<0x80:
            scratch[length] = UInt8(value)
            return length &+ 1
        case 0x80..<0x800:
            scratch[length] = UInt8(0xC0 | value >> 6)
            scratch[length &+ 1] = UInt8(0x80 | value & 0x3F)
            return length &+ 2
        case 0x800..<0x10000:
            scratch[length] = UInt8(0xE0 | value >> 12)
            scratch[length &+ 1] = UInt8(0x80 | value >> 6 & 0x3F)
            scratch[length &+ 2] = UInt8(0x80 | value & 0x3F)
            return length &+ 3
        default:
            scratch[length] = UInt8(0xF0 | value >> 18)
            scratch[length &+ 1] = UInt8(0x80 | value >> 12 & 0x3F)
            scratch[length &+ 2] = UInt8(0x80 | value >> 6 & 0x3F)
            scratch[length &+ 3] = UInt8(0x80 | value & 0x3F)
            return length &+ 4
        }
    }
}
