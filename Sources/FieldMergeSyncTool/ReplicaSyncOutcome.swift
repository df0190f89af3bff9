import FieldMergeSQLite
import FieldMergeSync

/// How a `fieldmerge sync` run ended.
public struct ReplicaSyncOutcome: Sendable {
    /// What the syncs did, added up over every attempt (`--until-settled` may make several).
    public var summary = SyncSummary()
    /// Sync calls made (1 unless `untilSettled` tried again).
    public var attempts = 0
    /// Why the last attempt failed, if it did.
    public var error: SyncError?
    /// Why the input was refused before anything was touched.
    public var badInput: String?
    /// Changes still in the replica after the sync: refused ones (kept aside, with the reason)
    /// and ones that still wait to be sent.
    public var unsynced: [UnsyncedChange] = []
    /// The server revision the replica holds at the end.
    public var maxRevision: Int64 = 0
    /// Whether this run created the replica file (it is removed again when the first sync
    /// failed before any round completed).
    public var created = false
    /// Wall time of the whole run, in seconds.
    public var seconds = 0.0

    public init() {}

    /// The exit code the outcome calls for: an error first, then changes left behind.
    public var exit: ReplicaSyncExit {
        if badInput != nil { return .badInput }
        if let error {
            switch error.code {
            case .unreachable: return .unreachable
            case .rejected, .invalidResponse: return .protocolError
            case .store, .cancelled, .aborted: return .localFailure
            }
        }
        return unsynced.isEmpty ? .settled : .stuck
    }

    /// Changes the server refused, kept aside until retried.
    public var refusedCount: Int { unsynced.count(where: { $0.refusal != nil }) }
}
