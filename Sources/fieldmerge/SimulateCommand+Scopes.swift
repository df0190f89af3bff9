import ArgumentParser
import FieldMergeJSON
import FieldMergeServer
import FieldMergeSimulation
import FieldMergeSyncHTTP
import Foundation

extension SimulateCommand {
    /// `--scopes`: the team app (ScopedSimulation) on a server in this process, or on the
    /// `fieldmerge serve` processes of `--server` with `--jwt-secret-file`.
    func runScoped() async throws {
        if let serverFiles { return try writeServerFiles(to: serverFiles) }
        guard !upgrade, !live else { throw ValidationError("--scopes has no --upgrade and no live mode") }
        guard server.isEmpty == (jwtSecretFile == nil) else {
            throw ValidationError("--scopes --server needs --jwt-secret-file (the servers' secret), and --jwt-secret-file needs --server")
        }
        var options = ScopedSimulationOptions()
        (options.devices, options.tasks, options.rounds, options.seed) = (devices ?? 12, records ?? 200, rounds, seed)
        (options.users, options.projects, options.editsPerDevice, options.keepFolder) = (users, projects, edits ?? 20, keep)
        (options.usersMove, options.staleProbes) = (usersMove, staleProbes)
        if rateSpec != nil && !faults { throw ValidationError("a rate spec needs --faults") }
        if faults { options.faults = try FaultRates(spec: rateSpec ?? "") }
        guard let mode = RevisionServer.Mode(rawValue: mode) else { throw ValidationError("--mode: strict or merge") }
        options.mode = mode
        let simulation = try ScopedSimulation(options: options, progress: ProgressLine.make(), remote: try scopedRemote())
        let report = try await simulation.run()
        ProgressLine.finish()
        print(report.rendered())
        if !report.passed { throw ExitCode(1) }
    }

    /// The servers of `--server`, each device's requests carrying tokens signed with the
    /// secret of `--jwt-secret-file`; nil without `--server`.
    private func scopedRemote() throws -> ScopedRemote? {
        guard let jwtSecretFile, !server.isEmpty else { return nil }
        guard var secret = FileManager.default.contents(atPath: jwtSecretFile).map(Array.init) else {
            throw ValidationError("--jwt-secret-file: cannot read \(jwtSecretFile)")
        }
        if secret.last == UInt8(ascii: "\n") { secret.removeLast() }  // as serve reads it
        let urls = try server.map { try remoteSyncURL($0) }
        let connect: [ScopedRemote.Connect] = urls.map { url in { token in HTTPTransport(url: url, token: token) } }
        return ScopedRemote(servers: connect, tokens: try TeamTokens(secret: secret))
    }

    /// Writes what `fieldmerge serve` serves a scoped run with: the team schema, its policy
    /// (the scope rules, everyone may write) and a new random HS256 secret.
    private func writeServerFiles(to folder: String) throws {
        let url = URL(fileURLWithPath: folder)
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        let schema = SchemaDocument.encode(TeamSchema.schema).rendered() + "\n"
        var generator = SystemRandomNumberGenerator()
        let secret = (0..<32).map { _ in String(format: "%02x", generator.next() as UInt8) }.joined() + "\n"
        let files = [("schema.json", schema), ("policy.json", TeamSchema.policy), ("jwt-secret", secret)]
        for (name, text) in files {
            try Data(text.utf8).write(to: url.appendingPathComponent(name))
        }
        try FileManager.default.setAttributes([.posixPermissions: 0o600], ofItemAtPath: url.appendingPathComponent("jwt-secret").path)
        let path = { (name: String) in url.appendingPathComponent(name).path }
        print("fieldmerge serve --schema \(path("schema.json")) --policy \(path("policy.json")) --jwt-secret-file \(path("jwt-secret")) ...")
        print("fieldmerge simulate --scopes --server URL --jwt-secret-file \(path("jwt-secret")) ...")
    }
}
