import FieldMergeJSON
import FieldMergeSQLite

/// The end of a `fieldmerge sync` run in words (standard output) or as one JSON document.
public struct ReplicaSyncReport: Sendable {
    public var input: ReplicaSyncInput
    public var outcome: ReplicaSyncOutcome
    /// At most this many unsynced changes are listed one by one in the text.
    public var listed = 20

    public init(input: ReplicaSyncInput, outcome: ReplicaSyncOutcome) {
        self.input = input
        self.outcome = outcome
    }

    /// The summary and, when something is left or failed, what and why; lines end with `\n`.
    public var text: String {
        if let bad = outcome.badInput { return "fieldmerge sync: \(bad); nothing changed\n" }
        let s = outcome.summary
        var text = "fieldmerge sync: \(input.replica) with \(input.url): \(s.rounds) requests in \(Self.seconds(outcome.seconds))"
        text += outcome.attempts > 1 ? " (\(outcome.attempts) attempts)" : ""
        text += "; \(s.received) records received, \(s.sent) sent, \(s.merged) merged, \(s.conflicts.count) conflicts decided"
        text += "; \(Self.bytes(s.bytesReceived)) received, \(Self.bytes(s.bytesSent)) sent; revision \(outcome.maxRevision)"
        text += outcome.created ? " (new replica)\n" : "\n"
        if let error = outcome.error {
            let retry = error.isRetryable ? "; try again later" : ""
            text += "fieldmerge sync: FAILED (\(error.code.rawValue)\(retry)): \(error.message)\n"
        }
        if !outcome.unsynced.isEmpty {
            let refused = outcome.refusedCount
            text += "fieldmerge sync: \(outcome.unsynced.count) changes left in the replica"
            text += " (\(refused) refused by the server and kept aside, \(outcome.unsynced.count - refused) waiting to be sent)\n"
            for change in outcome.unsynced.prefix(listed) { text += "  " + Self.describe(change) + "\n" }
            if outcome.unsynced.count > listed { text += "  … and \(outcome.unsynced.count - listed) more\n" }
        } else if outcome.error == nil {
            text += "fieldmerge sync: settled, nothing left to send\n"
        }
        return text
    }

    /// One JSON object with every figure, the changes left and the error; keys sorted.
    public var json: JSONValue {
        let s = outcome.summary
        var object: [String: JSONValue] = [
            "exitCode": .integer(Int64(outcome.exit.rawValue)),
            "outcome": .string("\(outcome.exit)"),
            "replica": .string(input.replica),
            "url": .string(input.url),
        ]
        if let bad = outcome.badInput {
            object["error"] = .object(["code": .string("badInput"), "message": .string(bad), "retryable": .bool(false)])
            return .object(object)
        }
        object.merge([
            "requests": .integer(Int64(s.rounds)),
            "attempts": .integer(Int64(outcome.attempts)),
            "received": .integer(Int64(s.received)),
            "sent": .integer(Int64(s.sent)),
            "merged": .integer(Int64(s.merged)),
            "conflicts": .integer(Int64(s.conflicts.count)),
            "conflictingChangeSets": .integer(Int64(s.conflictingChangeSets)),
            "refused": .integer(Int64(s.refused.count)),
            "bytesReceived": .integer(Int64(s.bytesReceived)),
            "bytesSent": .integer(Int64(s.bytesSent)),
            "seconds": .number(outcome.seconds),
            "maxRevision": .integer(outcome.maxRevision),
            "created": .bool(outcome.created),
            "unsynced": .array(outcome.unsynced.map(Self.json)),
            "error": outcome.error.map { error -> JSONValue in
                .object(["code": .string(error.code.rawValue), "message": .string(error.message), "retryable": .bool(error.isRetryable)])
            } ?? .null,
        ]) { $1 }
        return .object(object)
    }

    static func json(_ change: UnsyncedChange) -> JSONValue {
        .object([
            "entity": .string(change.entity),
            "id": .integer(change.id),
            "kind": .string(change.kind.rawValue),
            "refusal": change.refusal.map { refusal -> JSONValue in .object(["code": .string(refusal.code), "message": .string(refusal.message)]) } ?? .null,
        ])
    }

    static func describe(_ change: UnsyncedChange) -> String {
        let what = "\(change.entity) #\(change.id) \(change.kind.rawValue)"
        guard let refusal = change.refusal else { return what + ": waiting to be sent" }
        return what + ": refused (\(refusal.code)): \(refusal.message)"
    }

    static func seconds(_ value: Double) -> String {
        value < 10 ? "\((value * 100).rounded() / 100) s" : "\((value * 10).rounded() / 10) s"
    }

    static func bytes(_ count: Int) -> String {
        if count < 10_000 { return "\(count) bytes" }
        if count < 10_000_000 { return "\((Double(count) / 100).rounded() / 10) kB" }
        return "\((Double(count) / 100_000).rounded() / 10) MB"
    }
}
