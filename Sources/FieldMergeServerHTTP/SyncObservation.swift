import FieldMergeProtocol
import FieldMergeServer

/// What one `POST /sync` did, read once from its exchange: the fields of its log line and
/// what ``SyncMetrics`` counts (the same fields in both, Specs/http.md "Metrics and logs").
///
/// Every label it hands to metrics is bounded: entity names from the schema (another name
/// is `other`), refusal codes from the wire's list, error codes the server made.
struct SyncObservation: Sendable {
    /// How a request ended, the `outcome` label.
    enum Outcome: String, Sendable, CaseIterable {
        /// 200, every change set applied, nothing refused (or a stored reply served again).
        case ok
        /// 200, with a change set in conflict or a record refused.
        case conflict
        /// Refused as it stands (4xx but 408 and 429): sent again unchanged it fails again.
        case rejected
        /// A retryable failure (5xx, 408, 429): the client sends it again later.
        case retryable
    }

    /// One kind of refusal: the entity and the code.
    struct RefusalKey: Hashable, Sendable {
        var entity: String
        var code: String
    }

    var status: Int
    var outcome: Outcome
    /// The error code of a failed request (`storage`, `tooLarge`, …); nil for 200.
    var errorCode: String?
    var duration: Duration = .zero
    var changeSetsSent = 0
    var changeSetsApplied = 0
    var changeSetsInConflict = 0
    /// Records of applied change sets, by entity (their refused records left out).
    var recordsApplied: [String: Int] = [:]
    /// Change sets in conflict, once for each entity they touch.
    var conflicts: [String: Int] = [:]
    var refusals: [RefusalKey: Int] = [:]
    /// Records named by the catch-up page, by entity.
    var catchUpRecords: [String: Int] = [:]
    /// The bytes sent for an answer that carries a catch-up page (as sent: gzip'd or not).
    var catchUpBytes = 0
    var bytesIn = 0
    var bytesOut = 0
    /// The answer was a stored reply (a retry after a lost answer).
    var replayed = false

    /// The codes of refused records (Specs/http.md §1); another is counted as `other`.
    static let refusalCodes: Set<String> = ["unauthorized", "restricted", "notDeleted", "unstorable", "attachmentMissing"]

    /// A request answered with an error.
    init(failed status: Int, error: WireErrorBody?) {
        self.status = status
        outcome = SyncStatus.isRetryable(status) ? .retryable : .rejected
        errorCode = Self.boundedCode(error?.error ?? "http\(status)")
    }

    /// A request answered 200; `entities` are the names labels may carry.
    init(answered request: SyncRequest, _ handled: SyncExchange.Handled, bytesIn: Int, bytesOut: Int, entities: Set<String>) {
        status = SyncStatus.ok
        self.bytesIn = bytesIn
        self.bytesOut = bytesOut
        replayed = handled.replayed
        changeSetsSent = request.changeSets.count
        func label(_ entity: String) -> String { entities.contains(entity) ? entity : "other" }
        let answers = handled.response.changeSets
        let pages = max(0, answers.count - request.changeSets.count)
        for page in answers.prefix(pages) {
            for changes in page.entities {
                catchUpRecords[label(changes.entity), default: 0] += changes.create.count + changes.update.count + changes.delete.count
                    + changes.recreate.count + changes.leave.count
            }
        }
        if pages > 0, !catchUpRecords.isEmpty { catchUpBytes = bytesOut }
        // A stored reply changed nothing now: its change sets were counted when first applied.
        guard !replayed else {
            outcome = .ok
            return
        }
        for (sent, answer) in zip(request.changeSets, answers.dropFirst(pages)) {
            for refused in answer.refused {
                let code = Self.refusalCodes.contains(refused.code) ? refused.code : "other"
                refusals[RefusalKey(entity: label(refused.entity), code: code), default: 0] += 1
            }
            if answer.conflict == true {
                changeSetsInConflict += 1
                for entity in Set(sent.entities.map { label($0.entity) }) { conflicts[entity, default: 0] += 1 }
                continue
            }
            changeSetsApplied += 1
            for changes in sent.entities {
                let refused = answer.refused.count(where: { $0.entity == changes.entity })
                let count = changes.create.count + changes.update.count + changes.delete.count + changes.recreate.count - refused
                if count > 0 { recordsApplied[label(changes.entity), default: 0] += count }
            }
        }
        outcome = changeSetsInConflict > 0 || !refusals.isEmpty ? .conflict : .ok
    }

    var recordsAppliedTotal: Int { recordsApplied.values.reduce(0, +) }
    var refusalsTotal: Int { refusals.values.reduce(0, +) }
    var catchUpRecordsTotal: Int { catchUpRecords.values.reduce(0, +) }

    /// An error code as a label: the server's own codes are short ASCII words; anything else
    /// (it never happens, but a label must stay bounded) is `other`.
    static func boundedCode(_ code: String) -> String {
        let ok = !code.isEmpty && code.utf8.count <= 40 && code.utf8.allSatisfy { ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x7A) }
        return ok ? code : "other"
    }
}
