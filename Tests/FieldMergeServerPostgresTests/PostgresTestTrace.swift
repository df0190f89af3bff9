import Foundation
import Logging
import Synchronization

/// With `FIELDMERGE_TEST_TRACE` set to a folder, every connector of a PostgreSQL test logs
/// at trace level to `<folder>/<schema>.log`: how a run that stalls is diagnosed (the last
/// lines of the test that never ended say where it waits).
struct PostgresTestTrace: LogHandler {
    static let folder = ProcessInfo.processInfo.environment["FIELDMERGE_TEST_TRACE"].flatMap { $0.isEmpty ? nil : $0 }

    /// A logger writing to `name`'s file, or nil when tracing is off.
    static func logger(_ name: String) -> Logger? {
        guard let folder else { return nil }
        let file = Sink.open("\(folder)/\(name).log")
        var logger = Logger(label: name) { _ in PostgresTestTrace(sink: file) }
        logger.logLevel = .trace
        return logger
    }

    /// Writes `message` to `name`'s file when tracing is on.
    static func note(_ name: String, _ message: String) {
        logger(name)?.trace("\(message)")
    }

    final class Sink: Sendable {
        private let handle: Mutex<FileHandle?>
        private static let open = Mutex<[String: Sink]>([:])

        private init(_ path: String) {
            if !FileManager.default.fileExists(atPath: path) { FileManager.default.createFile(atPath: path, contents: nil) }
            let handle = FileHandle(forWritingAtPath: path)
            _ = try? handle?.seekToEnd()
            self.handle = Mutex(handle)
        }

        static func open(_ path: String) -> Sink {
            open.withLock { sinks in
                if let sink = sinks[path] { return sink }
                let sink = Sink(path)
                sinks[path] = sink
                return sink
            }
        }

        func write(_ line: String) {
            handle.withLock { try? $0?.write(contentsOf: Data(line.utf8)) }
        }
    }

    let sink: Sink
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(
        level: Logger.Level, message: Logger.Message, metadata extra: Logger.Metadata?, source: String, file: String, function: String, line: UInt
    ) {
        let all = metadata.merging(extra ?? [:]) { $1 }
        let fields = all.isEmpty ? "" : " " + all.map { "\($0)=\($1)" }.sorted().joined(separator: " ")
        let thread = Thread.isMainThread ? "main" : String(UInt(pthread_self()), radix: 16)
        sink.write("\(Date().timeIntervalSince1970) [\(thread)] \(level) \(message)\(fields) (\(function))\n")
    }
}
