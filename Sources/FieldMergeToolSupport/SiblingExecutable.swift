#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// The server's commands live in a second executable, `fieldmerge-server`, so that the
/// first `fieldmerge` build compiles no web server, PostgreSQL driver or JWT library
/// (Specs/architecture.md). `fieldmerge serve ...` still works where both are installed side
/// by side, as `git foo` runs `git-foo`: it replaces itself with the sibling.
package enum SiblingExecutable {
    /// Why a sibling could not be run.
    package struct Missing: Error, CustomStringConvertible {
        package var name: String
        package var looked: String
        package var reason: String

        package var description: String {
            """
            \(name) is not at \(looked) (\(reason)). The server's commands are in a second \
            executable: build it with `swift build --product \(name)` (or run \
            `swift run \(name) ...`), then `fieldmerge serve` finds it next to fieldmerge.
            """
        }
    }

    /// `name` in the folder of this executable.
    package static func path(named name: String) -> String {
        let own = URL(fileURLWithPath: ChildProcess.resolvedCurrentExecutable)
        return own.deletingLastPathComponent().appendingPathComponent(name).path
    }

    /// Replaces this process with `name` (found next to this executable) run with
    /// `arguments`; returns only by throwing, when it is missing or cannot be executed.
    package static func exec(_ name: String, arguments: [String]) throws -> Never {
        let path = path(named: name)
        guard access(path, X_OK) == 0 else {
            throw Missing(name: name, looked: path, reason: String(cString: strerror(errno)))
        }
        // Whatever this process buffered must not be lost: flush every C stream.
        fflush(nil)
        let argv = ([name] + arguments).map { strdup($0) } + [nil]
        execv(path, argv)
        let code = errno
        for pointer in argv { free(pointer) }
        throw Missing(name: name, looked: path, reason: String(cString: strerror(code)))
    }
}
