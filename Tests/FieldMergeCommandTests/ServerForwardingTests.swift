import Foundation
import Testing

/// `fieldmerge serve` and `fieldmerge bench serve` run `fieldmerge-server`, a second
/// executable beside `fieldmerge` (Specs/architecture.md, Specs/cli.md): the arguments reach
/// it unchanged, and without it the command says where it looked and how to build it.
@Suite struct ServerForwardingTests {
    @Test func serve_runsTheServerExecutable_withTheArgumentsAsGiven() throws {
        let fieldmerge = try requireFieldmergeExecutable()
        // The server's own validation answers: only fieldmerge-server knows --port's range.
        let run = try runFieldmerge(fieldmerge, ["serve", "--port", "70000", "--db", "/nonexistent/x.sqlite"])
        #expect(run.status == 64, "\(run.stderrText)")
        #expect(run.stderrText.contains("--port must be within 0...65535"), "\(run.stderrText)")
        let help = try runFieldmerge(fieldmerge, ["serve", "--help"])
        #expect(help.status == 0)
        #expect(String(decoding: help.stdout, as: UTF8.self).contains("--postgres"))
        let bench = try runFieldmerge(fieldmerge, ["bench", "serve", "--clients", "0"])
        #expect(bench.status == 64)
        #expect(bench.stderrText.contains("--clients: 1...1024"), "\(bench.stderrText)")
    }

    @Test func serveWithoutTheServerExecutable_exitsWith2_andSaysHowToBuildIt() throws {
        // A hard link in a folder of its own beside the executable, not a copy: a file just
        // written can still be open for writing in a child another test is spawning (the
        // descriptor lives until that child's exec), and running it then fails with ETXTBSY.
        let executable = try requireFieldmergeExecutable()
        let folder = executable.deletingLastPathComponent().appendingPathComponent("fm-forward-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let alone = folder.appendingPathComponent("fieldmerge")
        try FileManager.default.linkItem(at: executable, to: alone)
        let run = try runFieldmerge(alone, ["serve", "--port", "0"])
        #expect(run.status == 2)
        #expect(run.stderrText.contains("fieldmerge-server is not at \(folder.appendingPathComponent("fieldmerge-server").path)"), "\(run.stderrText)")
        #expect(run.stderrText.contains("swift build --product fieldmerge-server"))
        #expect(run.stdout.isEmpty)
    }

    @Test func help_namesTheServerExecutable_andHidesTheForwardingCommand() throws {
        let run = try runFieldmerge(try requireFieldmergeExecutable(), ["--help"])
        let text = String(decoding: run.stdout, as: UTF8.self)
        #expect(run.status == 0)
        #expect(text.contains("fieldmerge-server"))
        #expect(!text.contains("  serve "))
    }
}
