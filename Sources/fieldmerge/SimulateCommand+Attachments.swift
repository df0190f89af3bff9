import ArgumentParser
import FieldMergeSimulation

extension SimulateCommand {
    /// `--attachments`: devices attach files to records and sync them through a server in
    /// this process while transfers are cut off, the server and apps restart and garbage is
    /// collected (AttachmentSimulation).
    func runAttachments() async throws {
        guard server.isEmpty, !live, !upgrade, !sleeper, !faults, records == nil, users == nil, jwtSecretFile == nil, serverFiles == nil else {
            throw ValidationError("--attachments runs its own server with its own faults: no --server, --live, --upgrade, --sleeper, --faults, --records or options of --scopes")
        }
        guard (2...100_000).contains(files) else { throw ValidationError("--files: 2 to 100,000") }
        guard (1...(4 << 20)).contains(maxFileKib) else { throw ValidationError("--max-file-kib: 1 to 4,194,304 (4 GiB)") }
        var options = AttachmentSimulationOptions()
        (options.devices, options.rounds, options.seed, options.editsPerDevice) = (devices ?? 6, rounds, seed, edits ?? 3)
        (options.files, options.maxFileBytes, options.keepFolder) = (files, maxFileKib << 10, keep)
        options.minFileBytes = min(1 << 10, options.maxFileBytes)
        let simulation = try AttachmentSimulation(options: options, progress: ProgressLine.make())
        let report = try await simulation.run()
        ProgressLine.finish()
        print(report.rendered())
        if !report.passed { throw ExitCode(1) }
    }
}
