import FieldMerge
import FieldMergeJSON
import FieldMergeServer
import FieldMergeServerAuth
import FieldMergeServerSQLite
import FieldMergeSimulation
import FieldMergeSyncHTTP
import Foundation
import Testing

/// `fieldmerge simulate --scopes --server`: the scoped simulation against a server over HTTP
/// set up as `fieldmerge serve` sets it up from `simulate --scopes --server-files` (the team
/// schema from its JSON document, `TeamSchema.policy`, tokens for an HS256 secret), the
/// devices' tokens signed by the simulation (Specs/simulation.md, "Scopes").
@Suite struct ScopedSimulationOverHTTPTests {
    @Test func thePolicyDocument_readsAsTheRunsOwnRules() throws {
        let policy = try AccessPolicy.decode(Data(TeamSchema.policy.utf8), schema: TeamSchema.schema)
        #expect(policy.scopes == TeamSchema.rules)
    }

    @Test func theSimulationsTokens_verifyWithTheServersSecret_andNoOther() async throws {
        let token = try TeamTokens(secret: TestTokens.secret).token(user: "u3", roles: ["admin", "editor"])
        let identity = try await TestTokens.verifier().identity(of: token)
        #expect(identity.user == "u3" && identity.roles == ["admin", "editor"])
        let other = try TeamTokens(secret: TestTokens.otherSecret).token(user: "u3", roles: [])
        await #expect(throws: AuthenticationFailure.self) { try await TestTokens.verifier().identity(of: other) }
    }

    @Test func withFaults_overHTTP_nothingLeaksAndNothingAcknowledgedIsLost() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("scoped-http-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        // As `serve --schema --policy` reads the files `simulate --scopes --server-files` writes.
        let schema = try SchemaDocument.decode(JSONValue.parse(Data(SchemaDocument.encode(TeamSchema.schema).rendered().utf8)))
        let policy = try AccessPolicy.decode(Data(TeamSchema.policy.utf8), schema: schema)
        var serverOptions = RevisionServer.Options()
        (serverOptions.scopes, serverOptions.authorize, serverOptions.readable) = (policy.scopes, policy.authorization, policy.readFilter)
        let server = try RevisionServer(.file(path: folder + "/server.sqlite"), schema: schema, options: serverOptions)
        let report = try await withAuthenticatedServer(server, verifier: try await TestTokens.verifier()) { running in
            let url = running.syncURL
            let remote = ScopedRemote(
                servers: [{ token in HTTPTransport(url: url, token: token) }], tokens: try TeamTokens(secret: TestTokens.secret))
            var options = ScopedSimulationOptions()
            (options.devices, options.projects, options.tasks, options.rounds, options.seed) = (6, 5, 40, 4, 7)
            (options.editsPerDevice, options.faults, options.parentFolder) = (6, .standard, folder)
            return try await ScopedSimulation(options: options, remote: remote).run()
        }
        #expect(report.passed, "\(report.rendered())")
        #expect(report.violationCount == 0 && report.unsettled.isEmpty)
        #expect(report.remoteServers == 1)
        #expect(report.responses > 0 && report.recordsInspected > 0)
        #expect(report.probes > 0 && report.probesRefused == report.probes)
        #expect(report.roleChanges == 2 && report.joins > 0 && report.marksConfirmed > 0)
        // Transport faults and crashes are injected; a server in another process is never restarted.
        #expect((report.faultsInjected[.dropResponse] ?? 0) + (report.faultsInjected[.dropRequest] ?? 0) > 0)
        #expect(report.faultsInjected[.serverRestart] == nil)
    }
}
