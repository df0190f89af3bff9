import ArgumentParser
import FieldMergeToolSupport
import Foundation

/// A `fieldmerge serve` child on a free loopback port, stopped with SIGTERM.
final class ServeProcess: @unchecked Sendable {
    let process: Process
    let url: URL

    private init(process: Process, url: URL) {
        self.process = process
        self.url = url
    }

    /// Starts `serve --port 0` with `arguments` and waits for its "listening on" line.
    static func start(_ arguments: [String]) throws -> ServeProcess {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: ChildProcess.currentExecutable)
        process.arguments = ["serve", "--port", "0"] + arguments
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice  // one log line per request
        try process.run()
        var seen = Data()
        while true {
            let chunk = output.fileHandleForReading.availableData
            guard !chunk.isEmpty else {
                process.waitUntilExit()
                throw ValidationError("fieldmerge serve \(arguments.joined(separator: " ")) ended before listening (exit \(process.terminationStatus))")
            }
            seen.append(chunk)
            let text = String(decoding: seen, as: UTF8.self)
            if let range = text.range(of: "listening on "), let end = text[range.upperBound...].firstIndex(of: " "),
                let url = URL(string: String(text[range.upperBound..<end]))
            {
                return ServeProcess(process: process, url: url)
            }
        }
    }

    /// The child's resident memory now, in megabytes (`VmRSS`); nil when it cannot be read.
    var residentMegabytes: Double? {
        guard let status = try? String(contentsOfFile: "/proc/\(process.processIdentifier)/status", encoding: .utf8),
            let line = status.split(separator: "\n").first(where: { $0.hasPrefix("VmRSS:") }),
            let kilobytes = Double(line.split(separator: " ").dropFirst().first ?? "")
        else { return nil }
        return kilobytes / 1024
    }

    /// The CPU time the child has used so far (user and system, every thread), in seconds;
    /// nil when it cannot be read (`/proc/<pid>/stat`, fields 14 and 15, in clock ticks).
    var cpuSeconds: Double? {
        guard let stat = try? String(contentsOfFile: "/proc/\(process.processIdentifier)/stat", encoding: .utf8),
            let close = stat.lastIndex(of: ")")
        else { return nil }
        // After the command's name in parentheses: state is field 3, utime 14, stime 15.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else { return nil }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    func stop() {
        guard process.isRunning else { return }
        process.terminate()
        process.waitUntilExit()
    }
}
