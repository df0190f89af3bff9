import FieldMergeJSON
import FieldMergeTestSupport
import Foundation
import Testing

// The conformance vectors of Specs/merge-semantics.md: every file in
// Specs/conformance/merge/ is a merge document plus "name", "description" and "expected",
// a subset of the report that the merge must produce.

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

// MARK: - Malformed input

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
}
