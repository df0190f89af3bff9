import FieldMergeJSON
import FieldMergeTestSupport
import Foundation
import Testing

/// `fieldmerge sync` as a process: its exit codes and output reach the shell as documented
/// (Specs/cli.md); the syncing itself is tested against a live server in SyncCommandTests.
@Suite struct SyncExecutableTests {
    static let schema = conformanceDirectory.deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("schemas/reminders.json").path

    static func replica() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("fm-sync-exe-\(UUID().uuidString).sqlite").path
    }

    @Test func aBadURL_exitsWith2_saysWhy_andCreatesNothing() throws {
        let replica = Self.replica()
        let run = try runFieldmerge(
            try requireFieldmergeExecutable(), ["sync", "--url", "localhost/sync", "--replica", replica, "--schema", Self.schema])
        #expect(run.status == 2)
        #expect(run.stderrText.contains("bad --url localhost/sync"), "\(run.stderrText)")
        #expect(run.stderrText.hasSuffix("; nothing changed\n"))
        #expect(run.stdout.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: replica))
    }

    @Test func anUnreachableServer_exitsWith3_andReportsItInJSON() throws {
        let replica = Self.replica()
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: replica + suffix) } }
        let run = try runFieldmerge(
            try requireFieldmergeExecutable(),
            ["sync", "--url", "http://127.0.0.1:1/sync", "--replica", replica, "--schema", Self.schema, "--json"])
        #expect(run.status == 3, "\(run.stderrText)")
        let json = try JSONValue.parse(run.stdout)
        #expect(json["exitCode"] == .integer(3) && json["outcome"] == .string("unreachable"))
        #expect(json["error"]?["code"] == .string("unreachable") && json["error"]?["retryable"] == .bool(true))
        #expect(!FileManager.default.fileExists(atPath: replica), "a replica created by a failed first sync is removed")
    }
}
