import FieldMergeJSON
import FieldMergeTestSupport
import Foundation
import Testing

/// `fieldmerge merge` as a process: every conformance vector through the executable, and
/// malformed documents refused with exit code 2 and the path of what is wrong.
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

@Suite struct MalformedInputExecutableTests {
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
