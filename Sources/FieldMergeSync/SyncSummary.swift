import FieldMerge
import FieldMergeProtocol

/// What one ``SyncClient/sync(maxRounds:progress:)`` did.
public struct SyncSummary: Sendable, Equatable {
    /// Requests sent.
    public var rounds = 0
    /// Records sent (creates, updates, deletes).
    public var sent = 0
    /// Records received from the server (catch-up, confirmations, conflict truths).
    public var received = 0
    /// Records merged field by field with local pending changes.
    public var merged = 0
    /// Change sets the server answered as conflicts.
    public var conflictingChangeSets = 0
    /// Field and delete conflicts the merges reported.
    public var conflicts: [FieldConflict] = []
    /// Changes the server refused as they are, with its reasons: kept aside in the store
    /// (`Store.unsyncedChanges()`), not sent again until the app retries them, and never
    /// blocking the others.
    public var refused: [RefusedRecord] = []
    /// Bytes handed to the transport, and bytes it returned: over HTTP the answer as
    /// URLSession gave it, inflated when the server gzip'd it (not the bytes on the wire).
    public var bytesSent = 0
    public var bytesReceived = 0

    public init() {}

    /// Adds what `other` did to this summary (several syncs of one run, one device's syncs).
    public mutating func merge(_ other: SyncSummary) {
        rounds += other.rounds
        sent += other.sent
        received += other.received
        merged += other.merged
        conflictingChangeSets += other.conflictingChangeSets
        conflicts += other.conflicts
        refused += other.refused
        bytesSent += other.bytesSent
        bytesReceived += other.bytesReceived
    }
}

/// Progress of a sync, for a progress bar.
public struct SyncProgress: Sendable, Equatable {
    public var round: Int
    public var received: Int
    public var sent: Int
    public var hasMore: Bool
}

/// The stages of applying one response, where a fault-injection hook may abort.
package enum ApplyStage: String, Sendable, CaseIterable {
    /// The response is decoded; nothing is merged yet.
    case received
    /// Every record is merged; the store transaction has not started.
    case merged
    /// Everything is written inside the store transaction, which has not committed.
    case written
    /// The page is applied: committed, or, for a catch-up page, held in the catch-up's
    /// transaction (``CatchUpCommits``); the round has not returned yet.
    case committed
}
