import FieldMerge

/// Writes a ``JSONValue`` as pretty-printed JSON text with sorted keys, or (`compact`) on
/// one line with no space.
///
/// A double is written so that it reads back as a double: `1.0`, `-0.0`, `1e+300` (Swift's
/// shortest round-trip form), never `1` or `-0`, which ``JSONValue/parse(_:)`` reads as the
/// integer 1 and 0. Strings escape `"`, `\` and control characters only, as the wire does.
struct JSONWriter {
    private(set) var bytes: [UInt8] = []
    /// One line, no space: a line of a JSON-lines file.
    var compact = false

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
            append(compact ? "[" : "[\n")
            for (offset, item) in items.enumerated() {
                pad(indent + 2)
                write(item, indent: indent + 2)
                append(offset == items.count - 1 ? (compact ? "" : "\n") : (compact ? "," : ",\n"))
            }
            pad(indent)
            append("]")
        case .object(let members):
            guard !members.isEmpty else { return append("{}") }
            append(compact ? "{" : "{\n")
            let keys = members.keys.sorted()
            for (offset, key) in keys.enumerated() {
                pad(indent + 2)
                writeString(key)
                append(compact ? ":" : " : ")
                write(members[key]!, indent: indent + 2)
                append(offset == keys.count - 1 ? (compact ? "" : "\n") : (compact ? "," : ",\n"))
            }
            pad(indent)
            append("}")
        }
    }

    private mutating func append(_ text: String) {
        bytes.append(contentsOf: text.utf8)
    }

    private mutating func pad(_ count: Int) {
        guard !compact else { return }
        bytes.append(contentsOf: repeatElement(UInt8(ascii: " "), count: count))
    }

    private mutating func writeString(_ string: String) {
        JSONString.append(string, to: &bytes)
    }
}
