/// Names in PostgreSQL's SQL: the one place that turns a name into SQL text. Values never
/// go into SQL text; they are always bind parameters.
public enum PostgresIdentifier {
    /// PostgreSQL cuts longer names (in bytes) without an error, which could make two names one.
    public static let maxLength = 63

    /// What ``isPlainName(_:)`` accepts, in words.
    public static let plainNameRule = "lower-case ASCII letters, digits and underscores, starting with a letter or an underscore, at most 63 bytes"

    /// Whether `name` is a plain name: lower-case ASCII letters, digits and underscores,
    /// starting with a letter or an underscore, 1 to 63 bytes. Schema names must be.
    public static func isPlainName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard let first = bytes.first, bytes.count <= maxLength, first == UInt8(ascii: "_") || isLetter(first) else { return false }
        return bytes.allSatisfy { $0 == UInt8(ascii: "_") || isLetter($0) || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }
    }

    /// `name` quoted for SQL ("a""b" for a"b).
    ///
    /// - Throws: ``PostgresIdentifierError`` when `name` is empty, longer than ``maxLength``
    ///   bytes or holds a NUL or a control character: it is refused, never cut or cleaned.
    public static func quote(_ name: String) throws(PostgresIdentifierError) -> String {
        guard !name.isEmpty, name.utf8.count <= maxLength, !name.utf8.contains(where: { $0 < 0x20 || $0 == 0x7F }) else {
            throw PostgresIdentifierError(name: name)
        }
        return "\"" + name.replacing("\"", with: "\"\"") + "\""
    }

    private static func isLetter(_ byte: UInt8) -> Bool { (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte) }
}

/// A name PostgreSQL cannot take as it is.
public struct PostgresIdentifierError: Error, Sendable, CustomStringConvertible {
    public var name: String
    public var description: String {
        "the name \(name.debugDescription) cannot be a PostgreSQL identifier (1 to \(PostgresIdentifier.maxLength) bytes, no control characters)"
    }
}
