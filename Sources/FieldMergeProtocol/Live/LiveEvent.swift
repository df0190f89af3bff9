/// What the live channel tells a device (Specs/live.md): that it is open, that something
/// changed, or the changes themselves. Every event names the server's revision it brings the
/// device to, so a device that missed events (a dropped connection, a full buffer) notices by
/// its own cursor and syncs: no event is needed for correctness, each one saves a request.
public enum LiveEvent: Sendable, Equatable {
    /// The channel is open and the server stands at `revision`. A device behind it syncs
    /// (whatever was written while it was away).
    case ready(revision: Int64)
    /// The changes of the revisions after `after` through `revision`, as the catch-up part of
    /// an answer to `POST /sync` (the `response` JSON: one change set with no conflict,
    /// `maxRevision` = `revision`). A device whose cursor is `after` applies it as it would a
    /// catch-up page; any other device syncs instead.
    case changes(after: Int64, revision: Int64, response: [UInt8])
    /// Something the device may hold changed up to `revision`: sync (the server sends no
    /// data: the device's scope, the page's size or its schema version asked for a request).
    case poke(revision: Int64)

    /// The revision the event brings the device to.
    public var revision: Int64 {
        switch self {
        case .ready(let revision), .changes(_, let revision, _), .poke(let revision): return revision
        }
    }

    /// The event's SSE type (`event:` field).
    public var type: String {
        switch self {
        case .ready: return "ready"
        case .changes: return "changes"
        case .poke: return "poke"
        }
    }
}

extension LiveEvent {
    /// The event as Server-Sent Events text: `event:`, `id:` (the revision, so that a browser's
    /// `EventSource` resumes with it as `Last-Event-ID`), `data:` lines and a blank line.
    /// `changes` carries two data lines, `after` and the response JSON (which has no line
    /// breaks: the wire encoder escapes them inside strings).
    public var serverSentEvent: [UInt8] {
        var text = "event: \(type)\nid: \(revision)\n"
        switch self {
        case .ready(let revision), .poke(let revision):
            text += "data: \(revision)\n\n"
            return Array(text.utf8)
        case .changes(let after, _, let response):
            text += "data: \(after)\ndata: "
            var bytes = Array(text.utf8)
            bytes.reserveCapacity(bytes.count + response.count + 2)
            bytes += response
            bytes += [0x0A, 0x0A]
            return bytes
        }
    }

    /// A comment line that keeps a quiet connection open through proxies (ignored by readers).
    public static let keepAlive: [UInt8] = Array(": keep-alive\n\n".utf8)

    /// The event a parsed SSE message stands for: its `event:` type, `id:` and the joined
    /// `data:` lines (joined by a line feed, as the SSE standard does).
    ///
    /// - Throws: ``WireError`` (``WireError/Code/invalidValue``) for an unknown type or data that
    ///   is not what the type needs; a message of another type is refused rather than skipped,
    ///   since a server speaking another dialect would otherwise look merely quiet.
    public init(type: String, id: String?, data: [UInt8]) throws(WireError) {
        func revision(_ bytes: ArraySlice<UInt8>) throws(WireError) -> Int64 {
            guard !bytes.isEmpty, bytes.count <= 19, bytes.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                let value = Int64(String(decoding: bytes, as: UTF8.self))
            else { throw WireError(.invalidValue, "live event '\(type)': '\(String(decoding: bytes.prefix(40), as: UTF8.self))' is not a revision") }
            return value
        }
        switch type {
        case "ready": self = .ready(revision: try revision(data[...]))
        case "poke": self = .poke(revision: try revision(data[...]))
        case "changes":
            guard let newline = data.firstIndex(of: 0x0A) else {
                throw WireError(.invalidValue, "live event 'changes' has no response after its revision")
            }
            let after = try revision(data[..<newline])
            guard let id, let through = Int64(id), through > after else {
                throw WireError(.invalidValue, "live event 'changes' needs an id (its revision) past \(after)")
            }
            self = .changes(after: after, revision: through, response: Array(data[(newline + 1)...]))
        default:
            throw WireError(.invalidValue, "unknown live event type '\(type.prefix(40))'")
        }
    }
}
