/// Writes a ``JSONValue`` as pretty-printed JSON text with sorted keys.
///
/// A double is written so that it reads back as a double: `1.0`, `-0.0`, `1e+300` (Swift's
/// shortest round-trip form), never `1` or `-0`, which ``JSONValue/parse(_:)`` reads as the
/// integer 1 and 0. Strings escape `"`, `\` and control characters only, and are copied as
/// UTF-8 in runs between those.
struct JSONWriter {
    private(set) var bytes: [UInt8] = []

    var text: String { String(decoding: bytes, as: UTF8.self) }

    mutating func write(_ value: JSONValue, indent: Int = 0) {
        switch value {
        case .null: append("null")
        case .bool(let bool): append(bool ? "true" : "false")
        case .integer(let integer): append(String(integer))
        case .number(let double):
            // Non-finite doubles have no JSON form; documents carry them as strings.
            append(double.isFinite ? double.description : "null")
        case .string(let string): writeString(string)
        case .array(let items):
            guard !items.isEmpty else { return append("[]") }
            append("[\n")
            for (offset, item) in items.enumerated() {
                pad(indent + 2)
                write(item, indent: indent + 2)
                append(offset == items.count - 1 ? "\n" : ",\n")
            }
            pad(indent)
            append("]")
        case .object(let members):
            guard !members.isEmpty else { return append("{}") }
            append("{\n")
            let keys = members.keys.sorted()
            for (offset, key) in keys.enumerated() {
                pad(indent + 2)
                writeString(key)
                append(" : ")
                write(members[key]!, indent: indent + 2)
                append(offset == keys.count - 1 ? "\n" : ",\n")
            }
            pad(indent)
            append("}")
        }
    }

    private mutating func append(_ text: String) {
        bytes.append(contentsOf: text.utf8)
    }

    private mutating func pad(_ count: Int) {
        bytes.append(contentsOf: repeatElement(UInt8(ascii: " "), count: count))
    }

    private mutating func writeString(_ string: String) {
        var string = string
        bytes.append(UInt8(ascii: "\""))
        string.withUTF8 { utf8 in
            var runStart = 0
            for index in 0..<utf8.count {
                let byte = utf8[index]
                // Bytes of multi-byte characters are all 0x80 or more: copied as they are.
                guard byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") else { continue }
                bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<index]))
                escape(byte)
                runStart = index + 1
            }
            bytes.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart...]))
        }
        bytes.append(UInt8(ascii: "\""))
    }

    private mutating func escape(_ byte: UInt8) {
        switch byte {
        case UInt8(ascii: "\""): append("\\\"")
        case UInt8(ascii: "\\"): append("\\\\")
        case 0x0A: append("\\n")
        case 0x0D: append("\\r")
        case 0x09: append("\\t")
        case 0x08: append("\\b")
        case 0x0C: append("\\f")
        default:
            let hex = String(byte, radix: 16)
            append("\\u" + String(repeating: "0", count: 4 - hex.count) + hex)
        }
    }
}
