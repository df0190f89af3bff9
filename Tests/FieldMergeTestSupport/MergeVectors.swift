import FieldMergeJSON
import Foundation

// The merge conformance vectors of Specs/merge-semantics.md (every file in
// Specs/conformance/merge/ is a merge document plus "name", "description" and "expected",
// a subset of the report that the merge must produce), and malformed merge documents: read
// by the library's tests (FieldMergeJSONTests) and the executable's (FieldMergeCommandTests).

/// `Specs/conformance/merge`, found relative to this source file.
public let conformanceDirectory = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent()  // Tests/FieldMergeTestSupport
    .deletingLastPathComponent()  // Tests
    .deletingLastPathComponent()  // the package root
    .appendingPathComponent("Specs")
    .appendingPathComponent("conformance")
    .appendingPathComponent("merge")

/// The vector files' names, sorted; empty when the folder cannot be read.
public let conformanceVectorFiles: [String] =
    ((try? FileManager.default.contentsOfDirectory(atPath: conformanceDirectory.path)) ?? [])
    .filter { $0.hasSuffix(".json") }
    .sorted()

/// The least number of vectors the spec promises.
public let minimumVectorCount = 22

/// Reads one vector: the whole document, and its `expected` part.
public func loadVector(_ file: String) throws -> (document: JSONValue, expected: JSONValue) {
    let data = try Data(contentsOf: conformanceDirectory.appendingPathComponent(file))
    let document = try JSONValue.parse(data)
    guard let expected = document["expected"] else { throw VectorError(file: file) }
    return (document, expected)
}

/// A vector without its `expected` part.
public struct VectorError: Error, CustomStringConvertible {
    public var file: String
    public var description: String { "\(file) has no \"expected\"" }
}

/// A small valid merge document; the parameters break one part of it.
public func mergeDocumentText(
    strategy: String = "\"lastEditWins\"", entity: String = "\"reminders\"",
    priority: String = "2", titleStamp: String = "[200, 1]", extraValues: String = "", remoteID: String = "7"
) -> String {
    """
    {
      "schema": { "entities": [ { "name": "reminders", "fields": [
        { "name": "title", "type": "text" },
        { "name": "priority", "type": "integer", "strategy": \(strategy) } ] } ] },
      "entity": \(entity),
      "ancestor": { "id": 7, "values": { "title": "Buy milk", "priority": 1 },
                    "stamps": { "title": [100, 1], "priority": [100, 1] } },
      "local": { "id": 7, "values": { "title": "Buy oat milk", "priority": \(priority)\(extraValues) },
                 "stamps": { "title": \(titleStamp), "priority": [200, 1] } },
      "remote": { "id": \(remoteID), "values": { "title": "Buy milk", "priority": 3 },
                  "stamps": { "title": [100, 1], "priority": [300, 2] } }
    }
    """
}

public struct MalformedCase: Sendable, CustomStringConvertible {
    public var label: String
    public var text: String
    /// The error's path: exactly, or (for `pathSuffix`) its end.
    public var path: String
    public var pathIsSuffix = false
    /// A piece of the message.
    public var message: String

    public var description: String { label }
}

public let malformedCases: [MalformedCase] = [
    MalformedCase(label: "invalid JSON text", text: "{ \"schema\": { \"entities\": [", path: "$.schema.entities[0]",
                  message: "malformed JSON at line 1, column 28: unexpected end of input"),
    MalformedCase(label: "string in an integer field", text: mergeDocumentText(priority: "\"high\""),
                  path: "$.local.values.priority", message: "expected integer or null, got a string"),
    MalformedCase(label: "unknown field", text: mergeDocumentText(extraValues: ", \"colour\": \"red\""),
                  path: "$.local.values.colour", message: "no field 'colour'"),
    MalformedCase(label: "stamp with one part", text: mergeDocumentText(titleStamp: "[200]"),
                  path: "$.local.stamps.title", message: "stamp"),
    MalformedCase(label: "negative stamp", text: mergeDocumentText(titleStamp: "[200, -1]"),
                  path: "$.local.stamps.title", message: "stamp"),
    MalformedCase(label: "stamp as a string", text: mergeDocumentText(titleStamp: "\"200@1\""),
                  path: "$.local.stamps.title", message: "stamp"),
    // The schema is decoded with paths relative to the schema object, so the path is
    // "$.entities[0]..." and not "$.schema.entities[0]..."; only its end is checked here.
    MalformedCase(label: "unknown strategy", text: mergeDocumentText(strategy: "\"newest\""),
                  path: "entities[0].fields[1].strategy", pathIsSuffix: true, message: "unknown strategy 'newest'"),
    MalformedCase(label: "strategy that does not fit the type", text: mergeDocumentText(strategy: "\"union\""),
                  path: "entities", pathIsSuffix: true, message: "strategy 'union' cannot decide field 'reminders.priority'"),
    MalformedCase(label: "unknown entity", text: mergeDocumentText(entity: "\"lists\""),
                  path: "$.entity", message: "no entity 'lists'"),
    MalformedCase(label: "records with different ids", text: mergeDocumentText(remoteID: "8"),
                  path: "$", message: "differ in id"),
]

