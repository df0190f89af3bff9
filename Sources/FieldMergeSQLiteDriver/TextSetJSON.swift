import FieldMerge

/// Text sets are stored as JSON arrays of strings, so that apps can query them with SQLite's
/// `json_each`. A minimal writer and a strict reader, without Foundation.
package enum TextSetJSON {
    package static func encode(_ set: TextSet) -> String {
        var out: [UInt8] = [UInt8(ascii: "[")]
        for (index, member) in set.elements.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            appendString(member, to: &out)
        }
        out.append(UInt8(ascii: "]"))
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends `string` as a JSON string, every control character as `\u00XX`.
    package static func appendString(_ string: String, to out: inout [UInt8]) {
        JSONString.append(string, to: &out, shortEscapes: false)
    }

    /// Parses `["a","b"]`; nil for anything else.
    package static func decode(_ text: String) -> TextSet? {
        var parser = Parser(bytes: Array(text.utf8))
        return parser.array().map(TextSet.init)
    }

    private struct Parser {
        let bytes: [UInt8]
        var at = 0

        mutating func skipSpace() {
            while at < bytes.count, [9, 10, 13, 32].contains(bytes[at]) { at += 1 }
        }

        mutating func expect(_ byte: UInt8) -> Bool {
            skipSpace()
            guard at < bytes.count, bytes[at] == byte else { return false }
            at += 1
            return true
        }

        mutating func array() -> [String]? {
            guard expect(UInt8(ascii: "[")) else { return nil }
            var members: [String] = []
            if expect(UInt8(ascii: "]")) { return atEnd() ? members : nil }
            repeat {
                guard let member = string() else { return nil }
                members.append(member)
            } while expect(UInt8(ascii: ","))
            return expect(UInt8(ascii: "]")) && atEnd() ? members : nil
        }

        mutating func atEnd() -> Bool {
            skipSpace()
            return at == bytes.count
        }

        mutating func string() -> String? {
            guard expect(UInt8(ascii: "\"")) else { return nil }
            var out: [UInt8] = []
            while at < bytes.count {
                let byte = bytes[at]
                at += 1
                switch byte {
                case UInt8(ascii: "\""): return String(validating: out, as: UTF8.self)
                case 92:
                    guard at < bytes.count else { return nil }
                    let escaped = bytes[at]
                    at += 1
                    switch escaped {
                    case UInt8(ascii: "\""), 92, UInt8(ascii: "/"): out.append(escaped)
                    case UInt8(ascii: "n"): out.append(10)
                    case UInt8(ascii: "t"): out.append(9)
                    case UInt8(ascii: "r"): out.append(13)
                    case UInt8(ascii: "b"): out.append(8)
                    case UInt8(ascii: "f"): out.append(12)
                    case UInt8(ascii: "u"):
                        guard let scalar = unicodeEscape() else { return nil }
                        out.append(contentsOf: Array(String(Character(scalar)).utf8))
                    default: return nil
                    }
                default: out.append(byte)
                }
            }
            return nil
        }

        mutating func hex4() -> UInt32? {
            guard at + 4 <= bytes.count else { return nil }
            var value: UInt32 = 0
            for byte in bytes[at..<at + 4] {
                guard let digit = Character(UnicodeScalar(byte)).hexDigitValue else { return nil }
                value = value << 4 | UInt32(digit)
            }
            at += 4
            return value
        }

        mutating func unicodeEscape() -> Unicode.Scalar? {
            guard let high = hex4() else { return nil }
            if (0xD800..<0xDC00).contains(high) {
                guard at + 2 <= bytes.count, bytes[at] == 92, bytes[at + 1] == UInt8(ascii: "u") else { return nil }
                at += 2
                guard let low = hex4(), (0xDC00..<0xE000).contains(low) else { return nil }
                return Unicode.Scalar(0x10000 + ((high - 0xD800) << 10) + (low - 0xDC00))
            }
            return Unicode.Scalar(high)
        }
    }
}
