import Foundation

/// A JSON document as a plain value, decoded strictly: `true` is never a number and `1`
/// never a boolean.
///
/// Read documents with ``parse(_:)`` and write them with ``rendered()``: those are strict
/// and keep doubles apart from integers. The `Codable` conformance (for embedding a value in
/// other `Codable` types) goes through the coder it is given, with that coder's rules.
public enum JSONValue: Hashable, Sendable, Codable {
    case null
    case bool(Bool)
    case integer(Int64)
    case number(Double)
    case string(String)
    case array([JSONValue])
    case object([String: JSONValue])

    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        if container.decodeNil() {
            self = .null
        } else if let value = try? container.decode(Bool.self) {
            self = .bool(value)
        } else if let value = try? container.decode(Int64.self) {
            self = .integer(value)
        } else if let value = try? container.decode(Double.self) {
            self = .number(value)
        } else if let value = try? container.decode(String.self) {
            self = .string(value)
        } else if let value = try? container.decode([JSONValue].self) {
            self = .array(value)
        } else {
            self = .object(try container.decode([String: JSONValue].self))
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        switch self {
        case .null: try container.encodeNil()
        case .bool(let v): try container.encode(v)
        case .integer(let v): try container.encode(v)
        case .number(let v): try container.encode(v)
        case .string(let v): try container.encode(v)
        case .array(let v): try container.encode(v)
        case .object(let v): try container.encode(v)
        }
    }

    /// Parses JSON text strictly; malformed input is a ``DocumentError`` whose path is where
    /// the parser was and whose message names the line and column.
    ///
    /// Duplicate keys, invalid UTF-8, lone surrogates in `\u` escapes and numbers beyond a
    /// double's range are errors. A number without fraction and exponent that fits 64 bits is
    /// an ``integer(_:)``; every other number a ``number(_:)`` (so `-0.0` and `1.0` stay
    /// doubles).
    public static func parse(_ data: Data) throws(DocumentError) -> JSONValue {
        let result = data.withUnsafeBytes { bytes in
            Result { () throws(DocumentError) -> JSONValue in try JSONParser.parse(bytes) }
        }
        return try result.get()
    }

    /// The value as pretty-printed JSON text with sorted keys; doubles always with a
    /// fraction or exponent (`1.0`, `-0.0`), so that ``parse(_:)`` reads them back as doubles.
    public func rendered() -> String {
        var writer = JSONWriter()
        writer.write(self)
        return writer.text
    }

    /// The value as JSON text on one line, with sorted keys and no space (a line of a
    /// JSON-lines file), its doubles as ``rendered()`` writes them.
    public func renderedLine() -> String {
        var writer = JSONWriter()
        writer.compact = true
        writer.write(self)
        return writer.text
    }

    public subscript(key: String) -> JSONValue? {
        if case .object(let object) = self { return object[key] }
        return nil
    }
}

/// A document that does not describe what it should, with the JSON path of the problem.
public struct DocumentError: Error, Equatable, CustomStringConvertible {
    /// Where in the document, as a JSON path (`$.local.values.title`).
    public var path: String
    public var message: String

    public init(path: String, message: String) {
        self.path = path
        self.message = message
    }

    public var description: String { "\(path): \(message)" }
}
