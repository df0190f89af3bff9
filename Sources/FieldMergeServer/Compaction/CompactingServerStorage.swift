/// A storage whose tombstones and scope departures can be compacted: removed once they are
/// older than a horizon, with their log entries (Specs/reliability.md, "Compaction with a
/// horizon"). ``RevisionServer/compact(through:batch:dryRun:)`` drives it one bounded batch
/// per write transaction, so requests go on between batches.
///
/// Every call runs inside a transaction of the server's (``ServerStorage/write(_:)`` or
/// ``ServerStorage/read(_:)``) and, like every storage call, is `nonisolated(nonsending)`.
public protocol CompactingServerStorage: ServerStorage {
    /// Notes that `revision` committed at `time` (milliseconds since the epoch), so that a
    /// horizon given as an age finds its revision (``revision(markedBy:)``). A second mark of
    /// the same revision is ignored.
    nonisolated(nonsending) func markRevision(_ revision: Int64, at time: Int64) async throws
    /// The newest revision marked at or before `time`; nil when none was.
    nonisolated(nonsending) func revision(markedBy time: Int64) async throws -> Int64?
    /// What compacting through `revision` would remove, removing nothing.
    nonisolated(nonsending) func compactable(through revision: Int64) async throws -> CompactionCounts
    /// Removes at most `limit` tombstones and at most `limit` departures whose revision is at
    /// most `revision`, with the log entries of the removed tombstones, and raises the
    /// stored ``ServerState/horizon`` to the highest revision removed. First it makes sure
    /// every entity's id counter stands above every id it ever gave, so that no id whose
    /// tombstone goes is given again. Marks older than the newest one at or before
    /// `revision` go too.
    nonisolated(nonsending) func compact(through revision: Int64, limit: Int) async throws -> CompactionCounts
    /// The id `entity` gives next: every id below it was given once (and is alive, deleted,
    /// or compacted).
    nonisolated(nonsending) func idBound(_ entity: ServerEntity) async throws -> Int64
}

/// What a compaction removed, or would remove.
public struct CompactionCounts: Sendable, Equatable {
    /// Tombstones of deleted records (each with its log entry).
    public var tombstones: Int
    /// Records that left a scope (Specs/scopes.md), kept so devices learn they left.
    public var departures: Int
    /// The highest revision among them; 0 when there are none.
    public var highest: Int64

    public init(tombstones: Int = 0, departures: Int = 0, highest: Int64 = 0) {
        self.tombstones = tombstones
        self.departures = departures
        self.highest = highest
    }

    public var isEmpty: Bool { tombstones == 0 && departures == 0 }

    /// Adds what `other` removed (one batch more).
    public mutating func add(_ other: CompactionCounts) {
        tombstones += other.tombstones
        departures += other.departures
        highest = max(highest, other.highest)
    }
}

/// What ``RevisionServer/compact(through:batch:dryRun:)`` did.
public struct CompactionReport: Sendable, Equatable {
    /// The revision compacted through: nothing at or below it is kept but live records.
    public var through: Int64
    /// What was removed (or, in a dry run, would be).
    public var removed: CompactionCounts
    /// The data set's horizon afterwards: devices behind it reset.
    public var horizon: Int64
    /// Write transactions it took (0 in a dry run).
    public var batches: Int
    public var dryRun: Bool

    public init(through: Int64, removed: CompactionCounts, horizon: Int64, batches: Int, dryRun: Bool) {
        self.through = through
        self.removed = removed
        self.horizon = horizon
        self.batches = batches
        self.dryRun = dryRun
    }

    /// What an operator is told: "dry run: would remove … (run with --apply)" or "removed …
    /// in N batches; horizon now H".
    public var summary: String {
        let what = "\(removed.tombstones) tombstones and \(removed.departures) departures through revision \(through)"
        guard dryRun else { return "removed \(what) in \(batches) batches; horizon now \(horizon)" }
        return "dry run: would remove \(what); devices below revision \(max(horizon, removed.highest)) would download the data set again (run with --apply)"
    }
}
