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
    /// ``changes(after:revision:response:)`` as the server sends it to a device that reads
    /// compressed pages (`encoding=gzip`, Specs/live.md §3): `body` is the response JSON
    /// gzip'd, in base64, made once for every device that gets the page. Read back, it is
    /// a `changes` event (``init(type:id:data:)``).
    case compressedChanges(after: Int64, revision: Int64, body: [UInt8])

    /// The revision the event brings the device to.
    public var revision: Int64 {
        switch self {
        case .ready(let revision), .changes(_, let revision, _), .poke(let revision), .compressedChanges(_, let revision, _):
            return revision
        }
    }

    /// The event's SSE type (`event:` field).
    public var type: String {
        switch self {
        case .ready: return "ready"
        case .changes: return "changes"
        case .poke: return "poke"
        case .compressedChanges: return "changes-gzip"
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
        case .changes(let after, _, let response), .compressedChanges(let after, _, let response):
            text += "data: \(after)\ndata: "
            var bytes = Array(text.utf8)
            bytes.reserveCapacity(bytes.count + response.count + 2)
            bytes += response
            bytes += [0x0A, 0x0A]
            return bytes
        }
    }

    /// The event as a device reads it: ``compressedChanges(after:revision:body:)`` as the
    /// ``changes(after:revision:response:)`` it stands for, any other as it is.
    ///
    /// - Throws: ``WireError`` when the body is not base64 of a gzip stream, is truncated, or
    ///   inflates past ``maxInflatedBytes``.
    public func inflated() throws(WireError) -> LiveEvent {
        guard case .compressedChanges(let after, let revision, let body) = self else { return self }
        guard let gzip = Base64.decode(body[...]) else {
            throw WireError(.invalidValue, "live event 'changes-gzip': its response is not base64")
        }
        return .changes(after: after, revision: revision, response: try Gzip.decompress(gzip, limit: Self.maxInflatedBytes))
    }

    /// The most a `changes-gzip` event's page may inflate to: a page is at most
    /// `LiveHub.Options.maxRecords` records, far below this; more is refused, not inflated.
    public static let maxInflatedBytes = 64 << 20

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
        case "changes", "changes-gzip":
            guard let newline = data.firstIndex(of: 0x0A) else {
                throw WireError(.invalidValue, "live event '\(type)' has no response after its revision")
            }
            let after = try revision(data[..<newline])
            guard let id, let through = Int64(id), through > after else {
                throw WireError(.invalidValue, "live event '\(type)' needs an id (its revision) past \(after)")
            }
            guard type == "changes-gzip" else {
                self = .changes(after: after, revision: through, response: Array(data[(newline + 1)...]))
                return
            }
            self = try LiveEvent.compressedChanges(after: after, revision: through, body: Array(data[(newline + 1)...])).inflated()
        default:
            throw WireError(.invalidValue, "unknown live event type '\(type.prefix(40))'")
        }
    }
}
