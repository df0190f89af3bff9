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
    /// The download of the whole data set this sync began or finished because the server
    /// had compacted deletes the replica had not seen (`resetRequired`); nil when none.
    public var rebase: SyncRebase?
    /// Attachments whose bytes this sync uploaded (or found held by the server already, so
    /// sent nothing), and the bytes it sent for them.
    public var attachmentsUploaded = 0
    public var attachmentBytesUploaded: Int64 = 0
    /// Attachments downloaded after the sync for entities downloaded eagerly
    /// (`AttachmentDownloadPolicy.eager`).
    public var attachmentsDownloaded = 0
    /// Cached attachment files the sync's collection removed (no record references them and
    /// no upload needs them; ``SyncClient/setAttachmentCollection(every:)``).
    public var attachmentsCollected = 0
    /// Uploads the server refused (too large, the cached bytes do not have their hash) and
    /// eager downloads that failed: the sync itself went on. A refused upload is tried again
    /// after a wait, at most `Store.maxAttachmentAttempts` times; the records that reference
    /// it come back refused (`attachmentMissing`) until it is uploaded.
    public var attachmentFailures: [AttachmentFailure] = []

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
        attachmentsUploaded += other.attachmentsUploaded
        attachmentBytesUploaded += other.attachmentBytesUploaded
        attachmentsDownloaded += other.attachmentsDownloaded
        attachmentsCollected += other.attachmentsCollected
        attachmentFailures += other.attachmentFailures
        if let theirs = other.rebase {
            guard var mine = rebase else { rebase = theirs; return }
            mine.began = mine.began || theirs.began
            mine.unsyncedKept += theirs.unsyncedKept
            mine.finished = theirs.finished
            mine.removed += theirs.removed
            mine.keptWithChanges = theirs.keptWithChanges
            rebase = mine
        }
    }
}

/// What a sync did to download the data set again while keeping the replica's unsynced
/// changes (the server answered `resetRequired`: it had compacted deletes this replica had
/// not seen). The changes are sent as usual and merged three ways with what comes down;
/// records the server no longer has are removed once the download is complete.
public struct SyncRebase: Sendable, Equatable {
    /// Whether this sync began it (else it finished one an earlier sync began).
    public var began: Bool
    /// Records with unsynced changes when it began: none of them is given up.
    public var unsyncedKept: Int
    /// Whether the download completed in this sync; if not, the next sync goes on with it.
    public var finished = false
    /// Records removed when it finished, with the local records referencing them: the
    /// server no longer has them (deleted before the horizon, or out of the device's scopes).
    public var removed = 0
    /// Records the server no longer has that stay for their unsynced changes (refused and
    /// kept aside, or not sent yet).
    public var keptWithChanges = 0

    public init(began: Bool, unsyncedKept: Int) {
        self.began = began
        self.unsyncedKept = unsyncedKept
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
