#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// A child process run to completion: how it ended, and the resources it used.
package struct ChildExit {
    /// The raw status from `wait4`.
    package var status: Int32
    /// The child's peak resident set size (`rusage.ru_maxrss`), in KiB.
    package var maxResidentKilobytes: Int
    /// Wall time from spawn to reap, in seconds.
    package var seconds: Double

    /// The exit code, or `nil` if a signal ended the child.
    package var exitCode: Int32? { status & 0x7f == 0 ? (status >> 8) & 0xff : nil }
    /// The signal that ended the child, if one did.
    package var signal: Int32? { status & 0x7f == 0 ? nil : status & 0x7f }

    /// How the child ended, for a message: `exit code 1`, `signal 9`.
    package var outcome: String { exitCode.map { "exit code \($0)" } ?? "signal \(signal ?? 0)" }
}

/// A failed `posix_spawn` or `wait4`.
package struct ChildProcessError: Error, CustomStringConvertible {
    package var call: String
    package var code: Int32
    package var path: String

    package var description: String { "\(call) \(path): \(String(cString: strerror(code)))" }
}

package enum ChildProcess {
    /// This executable, to re-run it as a child.
    package static var currentExecutable: String {
        #if os(Linux)
        return "/proc/self/exe"
        #else
        return Bundle.main.executablePath ?? CommandLine.arguments[0]
        #endif
    }

    /// This executable's real path (through symbolic links), to find files beside it.
    package static var resolvedCurrentExecutable: String {
        #if os(Linux)
        if let path = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") { return path }
        #endif
        return URL(fileURLWithPath: Bundle.main.executablePath ?? CommandLine.arguments[0]).resolvingSymlinksInPath().path
    }

    /// Runs `path` with `arguments` (after `argv[0]`), sharing this process's stdin, stdout
    /// and stderr and environment, and waits for it.
    ///
    /// The peak RSS comes from `wait4`'s `rusage` for this child alone. Linux carries a
    /// process's high-water mark across `exec`, and `posix_spawn` execs from the parent's
    /// address space, so the figure is never below the parent's own peak at spawn time:
    /// callers keep the parent small and report that floor.
    package static func run(_ path: String, argv0: String, arguments: [String]) throws -> ChildExit {
        let argv = ([argv0] + arguments).map { strdup($0) } + [nil]
        let envp = ProcessInfo.processInfo.environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        let start = ContinuousClock.now
        var pid = pid_t()
        let spawned = posix_spawn(&pid, path, nil, nil, argv, envp)
        guard spawned == 0 else { throw ChildProcessError(call: "posix_spawn", code: spawned, path: path) }

        var status: Int32 = 0
        var usage = rusage()
        while wait4(pid, &status, 0, &usage) < 0 {
            guard errno == EINTR else { throw ChildProcessError(call: "wait4", code: errno, path: path) }
        }
        let elapsed = ContinuousClock.now - start
        #if canImport(Darwin)
        let kilobytes = Int(usage.ru_maxrss) / 1024  // bytes on Darwin
        #else
        let kilobytes = Int(usage.ru_maxrss)  // KiB on Linux
        #endif
        return ChildExit(
            status: status, maxResidentKilobytes: kilobytes,
            seconds: Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
    }
}
