import FieldMergeJSON
import Foundation
import Testing

// The conformance vectors of Specs/merge-semantics.md: every file in
// Specs/conformance/merge/ is a merge document plus "name", "description" and "expected",
// a subset of the report that the merge must produce.

/// `Specs/conformance/merge`, found relative to this source file.
let conformanceDirectory = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent()  // Tests/FieldMergeJSONTests
    .deletingLastPathComponent()  // Tests
    .deletingLastPathComponent()  // the package root
    .appendingPathComponent("Specs")
    .appendingPathComponent("conformance")
    .appendingPathComponent("merge")

/// The vector files' names, sorted; empty when the folder cannot be read.
let conformanceVectorFiles: [String] =
    ((try? FileManager.default.contentsOfDirectory(atPath: conformanceDirectory.path)) ?? [])
    .filter { $0.hasSuffix(".json") }
    .sorted()

/// The least number of vectors the spec promises.
let minimumVectorCount = 22

/// Reads one vector: the whole document, and its `expected` part.
func loadVector(_ file: String) throws -> (document: JSONValue, expected: JSONValue) {
    let data = try Data(contentsOf: conformanceDirectory.appendingPathComponent(file))
    let document = try JSONValue.parse(data)
    let expected = try #require(document["expected"], "\(file) has no \"expected\"")
    return (document, expected)
}

/// How long one in-process merge may take before it counts as hanging.
let mergeTimeLimit: TimeInterval = 60

/// The outcome of work on another thread, handed over under a lock.
final class ResultBox<T>: @unchecked Sendable {
    let lock = NSLock()
    var result: Result<T, any Error>?
}

/// Runs `body` on its own thread and waits at most `seconds` for it, so that a merge that
/// never finishes fails its test instead of stopping the whole run. Nil on timeout (the
/// thread is then abandoned).
func runWithTimeLimit<T>(_ seconds: TimeInterval, _ body: @escaping @Sendable () throws -> T) throws -> T? {
    let box = ResultBox<T>()
    let done = DispatchSemaphore(value: 0)
    let thread = Thread {
        let result = Result { try body() }
        box.lock.withLock { box.result = result }
        done.signal()
    }
    thread.stackSize = 8 << 20
    thread.start()
    guard done.wait(timeout: .now() + seconds) == .success else { return nil }
    return try box.lock.withLock { box.result! }.get()
}

@Suite struct ConformanceVectorTests {
    @Test func vectorsArePresent() {
        #expect(
            conformanceVectorFiles.count >= minimumVectorCount,
            "found \(conformanceVectorFiles.count) vectors in \(conformanceDirectory.path), expected at least \(minimumVectorCount)")
    }

    @Test(arguments: conformanceVectorFiles)
    func vectorMatchesLibrary(_ file: String) throws {
        let (document, expected) = try loadVector(file)

        // The format: a name matching the file name (without "NN-" and ".json") and a description.
        guard case .string(let name)? = document["name"] else {
            Issue.record("\(file): \"name\" must be a string")
            return
        }
        #expect(file == "\(file.prefix(3))\(name).json", "\(file): name '\(name)' does not match the file name")
        #expect(file.prefix(3).allSatisfy { $0.isNumber || $0 == "-" }, "\(file): file names are NN-short-name.json")
        if case .string(let description)? = document["description"] {
            #expect(!description.isEmpty, "\(file): empty description")
        } else {
            Issue.record("\(file): \"description\" must be a string")
        }

        let merge: @Sendable () throws -> JSONValue = { try MergeDocument(document).run() }
        let report = try #require(
            try runWithTimeLimit(mergeTimeLimit, merge), "\(file): the merge did not finish within \(Int(mergeTimeLimit)) s")
        let mismatches = report.mismatches(against: expected)
        #expect(mismatches.isEmpty, "\(file):\n\(mismatches.joined(separator: "\n"))\nreport:\n\(report.rendered())")

        // Deterministic: the same document always gives the same report.
        let again = try #require(try runWithTimeLimit(mergeTimeLimit, merge))
        #expect(again == report, "\(file): a second run gave a different report")
    }
}

@Suite struct ConformanceExecutableTests {
    @Test func executableMatchesEveryVector() throws {
        let executable = try requireFieldmergeExecutable()
        #expect(conformanceVectorFiles.count >= minimumVectorCount)
        for file in conformanceVectorFiles {
            let (_, expected) = try loadVector(file)
            let path = conformanceDirectory.appendingPathComponent(file).path
            let run = try runFieldmerge(executable, ["merge", path])
            guard !run.timedOut else {
                Issue.record("fieldmerge merge \(file) did not finish within \(toolTimeLimit)")
                continue
            }
            guard run.status == 0 else {
                Issue.record("fieldmerge merge \(file) exited with \(run.status): \(run.stderrText)")
                continue
            }
            let report = try JSONValue.parse(run.stdout)
            let mismatches = report.mismatches(against: expected)
            #expect(mismatches.isEmpty, "fieldmerge merge \(file):\n\(mismatches.joined(separator: "\n"))")
        }
    }

    @Test func executableReadsStandardInput() throws {
        let executable = try requireFieldmergeExecutable()
        let file = try #require(conformanceVectorFiles.first)
        let (_, expected) = try loadVector(file)
        let data = try Data(contentsOf: conformanceDirectory.appendingPathComponent(file))
        let run = try runFieldmerge(executable, ["merge", "-"], input: data)
        #expect(run.status == 0, "\(run.stderrText)")
        let mismatches = try JSONValue.parse(run.stdout).mismatches(against: expected)
        #expect(mismatches.isEmpty, "\(mismatches)")
    }
}

// MARK: - Malformed input

/// A small valid merge document; the parameters break one part of it.
func mergeDocumentText(
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

struct MalformedCase: Sendable, CustomTestStringConvertible {
    var label: String
    var text: String
    /// The error's path: exactly, or (for `pathSuffix`) its end.
    var path: String
    var pathIsSuffix = false
    /// A piece of the message.
    var message: String

    var testDescription: String { label }
}

let malformedCases: [MalformedCase] = [
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

/// The error reading and running `text` gives, or nil if it succeeds.
func documentError(_ text: String) -> DocumentError? {
    do {
        _ = try MergeDocument(JSONValue.parse(Data(text.utf8))).run()
        return nil
    } catch {
        return error
    }
}

@Suite struct MalformedInputTests {
    @Test func theBaseDocumentIsValid() throws {
        let report = try MergeDocument(JSONValue.parse(Data(mergeDocumentText().utf8))).run()
        let expected = try JSONValue.parse(Data("""
            { "merged": { "values": { "title": "Buy oat milk", "priority": 3 } },
              "upload": ["title"], "writeLocally": ["priority"] }
            """.utf8))
        #expect(report.mismatches(against: expected).isEmpty, "\(report.rendered())")
    }

    @Test(arguments: malformedCases)
    func libraryReportsPath(_ input: MalformedCase) throws {
        let error = try #require(documentError(input.text), "\(input.label) was accepted")
        if input.pathIsSuffix {
            #expect(error.path.hasPrefix("$") && error.path.hasSuffix(input.path), "path \(error.path)")
        } else {
            #expect(error.path == input.path)
        }
        #expect(error.message.contains(input.message), "message: \(error.message)")
        #expect(error.description == "\(error.path): \(error.message)")
    }

    @Test(arguments: malformedCases)
    func executableExitsWithCode2(_ input: MalformedCase) throws {
        let executable = try requireFieldmergeExecutable()
        let file = FileManager.default.temporaryDirectory
            .appendingPathComponent("fieldmerge-malformed-\(UUID().uuidString).json")
        try Data(input.text.utf8).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let run = try runFieldmerge(executable, ["merge", file.path])
        #expect(!run.timedOut)
        #expect(run.status == 2, "exit status \(run.status)")
        #expect(run.stdout.isEmpty, "stdout: \(String(decoding: run.stdout, as: UTF8.self))")
        #expect(run.stderrText.hasPrefix("fieldmerge merge: "), "stderr: \(run.stderrText)")
        #expect(run.stderrText.contains(input.path), "stderr: \(run.stderrText)")
        #expect(run.stderrText.contains(input.message), "stderr: \(run.stderrText)")
    }

    @Test func executableRejectsMalformedStandardInput() throws {
        let executable = try requireFieldmergeExecutable()
        let run = try runFieldmerge(executable, ["merge"], input: Data("not json".utf8))
        #expect(run.status == 2)
        #expect(run.stdout.isEmpty)
        #expect(run.stderrText.contains("malformed JSON"), "stderr: \(run.stderrText)")
    }

    @Test func executableReportsAMissingFile() throws {
        let executable = try requireFieldmergeExecutable()
        let run = try runFieldmerge(executable, ["merge", "/nonexistent/fieldmerge-vector.json"])
        #expect(run.status == 2)
        #expect(run.stderrText.contains("cannot read the file"), "stderr: \(run.stderrText)")
    }
}
