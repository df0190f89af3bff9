import Foundation
import Testing
#if canImport(Glibc)
import Glibc
#endif

// The `fieldmerge` executable as a child process, for the tests that run it. Started with
// posix_spawn and read back with FileHandle rather than Foundation's Process and
// Data(contentsOf:): under LeakSanitizer those report at exit (Data(contentsOf:) leaks 4 KB
// per empty file it reads; Process.run leaves a weak reference to the thread's run loop
// that LeakSanitizer cannot follow). Specs/reliability.md, section 2.

/// Where the `fieldmerge` executable built by `swift test` lies: in the folder of the test
/// runner (`.build/<triple>/debug/`), or next to the `.xctest` bundle on Apple platforms.
func fieldmergeExecutableCandidates() -> [URL] {
    var runners: [URL] = []
    if let exe = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
        runners.append(URL(fileURLWithPath: exe))
    }
    runners.append(URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath())
    if let path = Bundle.main.executablePath { runners.append(URL(fileURLWithPath: path)) }
    var folders: [URL] = []
    for runner in runners {
        var folder = runner.deletingLastPathComponent()
        // Foo.xctest/Contents/MacOS/Foo, or a Linux Foo.xctest that is a file: the products
        // lie in the folder holding the bundle.
        if let bundle = runner.pathComponents.lastIndex(where: { $0.hasSuffix(".xctest") }) {
            folder = URL(fileURLWithPath: NSString.path(withComponents: Array(runner.pathComponents[..<bundle])))
        }
        folders.append(folder)
    }
    #if canImport(Darwin)
    // Not on Linux: swift-corelibs-foundation's Bundle.allBundles leaks the array it
    // returns (CFBundleGetAllBundles, Specs/reliability.md), and the runner's folder is found above.
    for bundle in Bundle.allBundles where bundle.bundleURL.pathExtension == "xctest" {
        folders.append(bundle.bundleURL.deletingLastPathComponent())
    }
    #endif
    var seen: Set<String> = []
    return folders.map { $0.appendingPathComponent("fieldmerge") }.filter { seen.insert($0.path).inserted }
}

/// The `fieldmerge` executable; records a failure (the test must not pass silently) when
/// it is missing.
func requireFieldmergeExecutable() throws -> URL {
    let candidates = fieldmergeExecutableCandidates()
    let found = candidates.first {
        var isDirectory: ObjCBool = false
        return FileManager.default.fileExists(atPath: $0.path, isDirectory: &isDirectory)
            && !isDirectory.boolValue && FileManager.default.isExecutableFile(atPath: $0.path)
    }
    return try #require(
        found,
        """
        the fieldmerge executable was not found next to the test runner; `swift test` builds \
        every product, so this is a build problem. Looked at: \
        \(candidates.map(\.path).joined(separator: ", "))
        """)
}

struct ToolRun {
    var status: Int32
    var stdout: Data
    var stderr: Data
    var timedOut: Bool
    var stderrText: String { String(decoding: stderr, as: UTF8.self) }
}

/// How long one `fieldmerge` run may take before it counts as hanging.
let toolTimeLimit: Duration = .seconds(60)

/// Runs `fieldmerge` with `arguments`, feeding `input` on standard input. The outputs go
/// through temporary files, so a large output cannot block the child, and a child that
/// runs longer than ``toolTimeLimit`` is terminated and reported as timed out.
func runFieldmerge(_ executable: URL, _ arguments: [String], input: Data = Data()) throws -> ToolRun {
    let fileManager = FileManager.default
    let stem = fileManager.temporaryDirectory.appendingPathComponent("fieldmerge-run-\(UUID().uuidString)")
    let inURL = stem.appendingPathExtension("in")
    let outURL = stem.appendingPathExtension("out")
    let errURL = stem.appendingPathExtension("err")
    try input.write(to: inURL)
    try Data().write(to: outURL)
    try Data().write(to: errURL)
    defer { for url in [inURL, outURL, errURL] { try? fileManager.removeItem(at: url) } }
    let stdin = try FileHandle(forReadingFrom: inURL)
    let stdout = try FileHandle(forWritingTo: outURL)
    let stderr = try FileHandle(forWritingTo: errURL)
    defer { for handle in [stdin, stdout, stderr] { try? handle.close() } }

    let (status, timedOut) = try spawnAndWait(
        executable.path, arguments,
        stdio: (stdin.fileDescriptor, stdout.fileDescriptor, stderr.fileDescriptor))
    return ToolRun(status: status, stdout: try readWholeFile(outURL), stderr: try readWholeFile(errURL), timedOut: timedOut)
}

/// The bytes of a file, read with FileHandle (Data(contentsOf:) leaks on an empty file).
func readWholeFile(_ url: URL) throws -> Data {
    let handle = try FileHandle(forReadingFrom: url)
    defer { try? handle.close() }
    return try handle.readToEnd() ?? Data()
}

/// Starts `path` with `arguments` and the given standard input, output and error, and
/// waits for it; past ``toolTimeLimit`` it is sent SIGTERM and reported as timed out.
/// Returns the exit status, or the signal's number when a signal ended it (as
/// `Process.terminationStatus` does).
private func spawnAndWait(_ path: String, _ arguments: [String], stdio: (Int32, Int32, Int32)) throws -> (Int32, Bool) {
    #if canImport(Darwin)
    var actions: posix_spawn_file_actions_t?
    #else
    var actions = posix_spawn_file_actions_t()
    #endif
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_adddup2(&actions, stdio.0, 0)
    posix_spawn_file_actions_adddup2(&actions, stdio.1, 1)
    posix_spawn_file_actions_adddup2(&actions, stdio.2, 2)
    let argv = ([path] + arguments).map { strdup($0) } + [nil]
    defer { for pointer in argv { free(pointer) } }
    var pid = pid_t()
    let spawned = posix_spawn(&pid, path, &actions, nil, argv, environ)
    guard spawned == 0 else { throw POSIXError(POSIXErrorCode(rawValue: spawned) ?? .EIO) }

    let deadline = ContinuousClock.now + toolTimeLimit
    var timedOut = false
    var status: Int32 = 0
    while true {
        let waited = waitpid(pid, &status, WNOHANG)
        if waited == pid { break }
        if waited < 0 {
            guard errno == EINTR else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
            continue
        }
        if !timedOut, ContinuousClock.now > deadline {
            timedOut = true
            kill(pid, SIGTERM)
        }
        usleep(2_000)
    }
    let signal = status & 0x7f
    return (signal == 0 ? (status >> 8) & 0xff : signal, timedOut)
}
