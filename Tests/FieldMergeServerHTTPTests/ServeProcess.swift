import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `fieldmerge-server`, or another executable of the package (built beside the test runner
/// by `swift build --build-tests`), as a child process: started with posix_spawn (Foundation's Process reports leaks under
/// LeakSanitizer, Specs/reliability.md), its output in temporary files.
struct ServeProcess {
    let pid: pid_t
    let stdout: URL
    let stderr: URL

    /// The executable next to the test runner (or the folder holding the `.xctest` bundle).
    static func executable(_ name: String = "fieldmerge-server") throws -> URL {
        let runner = URL(fileURLWithPath: try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe"))
        var folder = runner.deletingLastPathComponent()
        if let bundle = runner.pathComponents.lastIndex(where: { $0.hasSuffix(".xctest") }) {
            folder = URL(fileURLWithPath: NSString.path(withComponents: Array(runner.pathComponents[..<bundle])))
        }
        let executable = folder.appendingPathComponent(name)
        try #require(FileManager.default.isExecutableFile(atPath: executable.path), "no \(name) at \(executable.path)")
        return executable
    }

    /// Starts `fieldmerge-server ARGS` (or `executable ARGS`) with `environment` added to this process's.
    static func start(
        _ arguments: [String], environment: [String: String] = [:], executable name: String = "fieldmerge-server"
    ) throws -> ServeProcess {
        let stem = FileManager.default.temporaryDirectory.appendingPathComponent("fm-serve-\(UUID().uuidString)")
        let (outURL, errURL) = (stem.appendingPathExtension("out"), stem.appendingPathExtension("err"))
        for url in [outURL, errURL] { try Data().write(to: url) }
        let out = try FileHandle(forWritingTo: outURL)
        let err = try FileHandle(forWritingTo: errURL)
        defer { try? out.close(); try? err.close() }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_adddup2(&actions, out.fileDescriptor, 1)
        posix_spawn_file_actions_adddup2(&actions, err.fileDescriptor, 2)
        let path = try executable(name).path
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        let variables = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let envp = variables.map { strdup("\($0)=\($1)") } + [nil]
        defer { for pointer in argv + envp { free(pointer) } }
        var pid = pid_t()
        let spawned = posix_spawn(&pid, path, &actions, nil, argv, envp)
        guard spawned == 0 else { throw POSIXError(POSIXErrorCode(rawValue: spawned) ?? .EIO) }
        return ServeProcess(pid: pid, stdout: outURL, stderr: errURL)
    }

    var output: String { (try? String(contentsOf: stdout, encoding: .utf8)) ?? "" }
    var errors: String { (try? String(contentsOf: stderr, encoding: .utf8)) ?? "" }

    /// The port of the "listening on http://127.0.0.1:PORT/sync" line, waiting up to 60 s
    /// for it; nil when the process ends or the time passes first.
    func port() async throws -> Int? {
        for _ in 0..<600 {
            if let line = output.split(separator: "\n").first(where: { $0.contains("listening on http://") }),
                let address = line.split(separator: " ").first(where: { $0.hasPrefix("http://") }),
                let port = Int(address.split(separator: ":").last?.split(separator: "/").first ?? "")
            {
                return port
            }
            var status: Int32 = 0
            if waitpid(pid, &status, WNOHANG) == pid { return nil }
            try await Task.sleep(for: .milliseconds(100))
        }
        return nil
    }

    /// Sends `signal` and waits for the exit status (SIGKILL after 30 s).
    @discardableResult
    func stop(_ signal: Int32 = SIGTERM) async throws -> Int32 {
        kill(pid, signal)
        var status: Int32 = 0
        for step in 0..<3_000 {
            if waitpid(pid, &status, WNOHANG) == pid { break }
            if step == 2_999 { kill(pid, SIGKILL); waitpid(pid, &status, 0) }
            try await Task.sleep(for: .milliseconds(10))
        }
        removeFiles()
        return Self.exitStatus(status)
    }

    /// The exit code, or 128 + the signal that ended the process.
    static func exitStatus(_ status: Int32) -> Int32 { (status & 0x7f) == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f) }

    func removeFiles() {
        try? FileManager.default.removeItem(at: stdout)
        try? FileManager.default.removeItem(at: stderr)
    }

    /// Runs `fieldmerge-server ARGS` (or `executable ARGS`) to its end (a refusal): the exit
    /// status and standard error.
    static func run(
        _ arguments: [String], environment: [String: String] = [:], executable name: String = "fieldmerge-server"
    ) async throws -> (status: Int32, errors: String) {
        let process = try start(arguments, environment: environment, executable: name)
        var status: Int32 = 0
        for _ in 0..<6_000 {
            if waitpid(process.pid, &status, WNOHANG) == process.pid {
                let errors = process.errors
                process.removeFiles()
                return (exitStatus(status), errors)
            }
            try await Task.sleep(for: .milliseconds(10))
        }
        return (try await process.stop(SIGKILL), "did not end")
    }
}
