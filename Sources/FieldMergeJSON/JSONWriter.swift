/// Writes a ``JSONValue`` as pretty-printed JSON text with sorted keys.
///
/// A double is written so that it reads back as a double: `1.0`, `-0.0`, `1e+300` (Swift's
/// shortest round-trip form), never `1` or `-0`, which ``JSONValue/parse(_:)`` reads as the
/// integer 1 and 0. Strings escape `"`, `\` and control characters only.
struct JSONWriter {
    private(set) var text = ""

    mutating func write(_ value: JSONValue, indent: Int = 0) {
        switch value {
        case .null: text += "null"
        case .bool(let bool): text += bool ? "true" : "false"
        case .integer(let integer): text += String(integer)
        case .number(let double):
            // Non-finite doubles have no JSON form; documents carry them as strings.
            text += double.isFinite ? double.description : "null"
        case .string(let string): writeString(string)
        case .array(let items):
            guard !items.isEmpty else {
                text += "[]"
                return
            }
            text += "[\n"
            for (offset, item) in items.enumerated() {
                pad(indent + 2)
                write(item, indent: indent + 2)
                text += offset == items.count - 1 ? "\n" : ",\n"
            }
            pad(indent)
            text += "]"
        case .object(let members):
            guard !members.isEmpty else {
                text += "{}"
                return
            }
            text += "{\n"
            let keys = members.keys.sorted()
            for (offset, key) in keys.enumerated() {
                pad(indent + 2)
                writeString(key)
                text += " : "
                write(members[key]!, indent: indent + 2)
                text += offset == keys.count - 1 ? "\n" : ",\n"
            }
            pad(indent)
            text += "}"
        }
    }

    private mutating func pad(_ count: Int) {
        text += String(repeating: " ", count: count)
    }

    private mutating func writeString(_ string: String) {
        text += "\""
        for scalar in string.unicodeScalars {
            switch scalar {
            case "\"": text += "\\\""
            case "\\": text += "\\\\"
            case "\n": text += "\\n"
            case "\r": text += "\\r"
            case "\t": text += "\\t"
            case "\u{08}": text += "\\b"
            case "\u{0C}": text += "\\f"
            case "\u{00}"..."\u{1F}":
                let hex = String(scalar.value, radix: 16)
                text += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            default: text.unicodeScalars.append(scalar)
            }
        }
        text += "\""
    }
}
