import FieldMergeJSON
import Foundation
import Testing

/// `fieldmerge simulate --scopes --server-files DIR` writes what `fieldmerge serve` serves a
/// scoped run with, and `--jwt-secret-file` goes with `--scopes --server` only
/// (Specs/simulation.md, "Scopes"; the run itself is ScopedSimulationOverHTTPTests and
/// `Scripts/simulate-postgres --scopes`).
@Suite struct ScopedServerFilesTests {
    @Test func serverFiles_areTheTeamSchema_itsPolicy_andANewSecret() throws {
        let fieldmerge = try requireFieldmergeExecutable()
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("fm-team-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let run = try runFieldmerge(fieldmerge, ["simulate", "--scopes", "--server-files", folder.path])
        #expect(run.status == 0, "\(run.stderrText)")
        #expect(String(decoding: run.stdout, as: UTF8.self).contains("--policy \(folder.appendingPathComponent("policy.json").path)"))
        let schema = try SchemaDocument.load(contentsOf: folder.appendingPathComponent("schema.json").path)
        #expect(schema.entities.map(\.name) == ["users", "projects", "memberships", "tasks", "comments"])
        let policy = try JSONValue.parse(try readWholeFile(folder.appendingPathComponent("policy.json")))
        #expect(policy["scopes"]?["project"]?["root"] == .string("projects"))
        let secretFile = folder.appendingPathComponent("jwt-secret")
        let secret = String(decoding: try readWholeFile(secretFile), as: UTF8.self)
        #expect(secret.count == 65 && secret.hasSuffix("\n") && secret.dropLast().allSatisfy(\.isHexDigit))
        let mode = try FileManager.default.attributesOfItem(atPath: secretFile.path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        // Written again: another secret.
        #expect(try runFieldmerge(fieldmerge, ["simulate", "--scopes", "--server-files", folder.path]).status == 0)
        #expect(String(decoding: try readWholeFile(secretFile), as: UTF8.self) != secret)
    }

    @Test func aSecretFile_needsScopesAndAServer_andAServerNeedsTheSecret() throws {
        let fieldmerge = try requireFieldmergeExecutable()
        let withoutServer = try runFieldmerge(fieldmerge, ["simulate", "--scopes", "--jwt-secret-file", "/nonexistent"])
        #expect(withoutServer.status == 64 && withoutServer.stderrText.contains("--jwt-secret-file needs --server"), "\(withoutServer.stderrText)")
        let withoutSecret = try runFieldmerge(fieldmerge, ["simulate", "--scopes", "--server", "http://127.0.0.1:1"])
        #expect(withoutSecret.status == 64 && withoutSecret.stderrText.contains("--scopes --server needs --jwt-secret-file"))
        let withoutScopes = try runFieldmerge(fieldmerge, ["simulate", "--jwt-secret-file", "/nonexistent"])
        #expect(withoutScopes.status == 64 && withoutScopes.stderrText.contains("need --scopes"), "\(withoutScopes.stderrText)")
    }
}
