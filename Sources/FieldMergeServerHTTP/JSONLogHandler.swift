import FieldMerge
import Logging

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A swift-log handler that writes one JSON object per line (`fieldmerge serve --log-format
/// json`): `time` (UTC, ISO 8601 with milliseconds), `level`, `label`, `message`, then the
/// metadata's keys, sorted (a key that would shadow one of those four gets a leading `_`).
/// Strings are escaped as JSON wants (quotes, backslashes, every control character), so a
/// message holding a newline is still one line; integers and booleans are JSON numbers and
/// booleans, nested metadata objects and arrays.
public struct JSONLogHandler: LogHandler {
    public var metadata: Logger.Metadata = [:]
    public var logLevel: Logger.Level = .info
    public var metadataProvider: Logger.MetadataProvider?
    private let label: String
    private let write: @Sendable ([UInt8]) -> Void

    /// - Parameters:
    ///   - label: The logger's label.
    ///   - write: Takes each line, its newline included; by default, standard error.
    public init(label: String, write: @escaping @Sendable ([UInt8]) -> Void = JSONLogHandler.standardError) {
        self.label = label
        self.write = write
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var all = metadata
        if let provided = metadataProvider?.get() { all.merge(provided) { $1 } }
        if let own = event.metadata { all.merge(own) { $1 } }
        write(Self.line(
            time: Self.now(), level: event.level, label: label, message: event.message.description, metadata: all))
    }

    static let reserved: Set<String> = ["time", "level", "label", "message"]

    /// One JSON object and a newline.
    static func line(time: String, level: Logger.Level, label: String, message: String, metadata: Logger.Metadata) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        out.append(UInt8(ascii: "{"))
        func field(_ key: String, _ value: () -> Void) {
            if out.count > 1 { out.append(UInt8(ascii: ",")) }
            JSONString.append(key, to: &out)
            out.append(UInt8(ascii: ":"))
            value()
        }
        field("time") { JSONString.append(time, to: &out) }
        field("level") { JSONString.append(level.rawValue, to: &out) }
        field("label") { JSONString.append(label, to: &out) }
        field("message") { JSONString.append(message, to: &out) }
        for key in metadata.keys.sorted() {
            let name = reserved.contains(key) ? "_" + key : key
            field(name) { append(metadata[key]!, to: &out) }
        }
        out.append(contentsOf: "}\n".utf8)
        return out
    }

    static func append(_ value: Logger.Metadata.Value, to out: inout [UInt8]) {
        switch value {
        case .string(let text): JSONString.append(text, to: &out)
        case .stringConvertible(let value):
            switch value {
            case let flag as Bool: out.append(contentsOf: (flag ? "true" : "false").utf8)
            case let number as any BinaryInteger: out.append(contentsOf: number.description.utf8)
            default: JSONString.append(value.description, to: &out)
            }
        case .array(let values):
            out.append(UInt8(ascii: "["))
            for (index, element) in values.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                append(element, to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .dictionary(let entries):
            out.append(UInt8(ascii: "{"))
            for (index, key) in entries.keys.sorted().enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                JSONString.append(key, to: &out)
                out.append(UInt8(ascii: ":"))
                append(entries[key]!, to: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    /// Writes `line` to standard error in one call (lines of concurrent requests never mix).
    public static let standardError: @Sendable ([UInt8]) -> Void = { line in writeAll(line, to: 2) }

    /// Now, as `2026-11-26T22:07:04.123Z`.
    static func now() -> String {
        var spec = timespec()
        clock_gettime(CLOCK_REALTIME, &spec)
        var seconds = spec.tv_sec
        var parts = tm()
        gmtime_r(&seconds, &parts)
        func two(_ value: Int32) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let millis = Int(spec.tv_nsec / 1_000_000)
        let fraction = millis < 10 ? "00\(millis)" : millis < 100 ? "0\(millis)" : "\(millis)"
        return "\(parts.tm_year + 1900)-\(two(parts.tm_mon + 1))-\(two(parts.tm_mday))T\(two(parts.tm_hour)):\(two(parts.tm_min)):\(two(parts.tm_sec)).\(fraction)Z"
    }
}

/// Writes `bytes` to the file descriptor, going on after a short write.
private func writeAll(_ bytes: [UInt8], to descriptor: Int32) {
    bytes.withUnsafeBufferPointer { buffer in
        var offset = 0
        while offset < buffer.count {
            let written = write(descriptor, buffer.baseAddress! + offset, buffer.count - offset)
            if written <= 0 { return }
            offset += written
        }
    }
}
