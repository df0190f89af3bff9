import FieldMergeServer
import PostgresNIO

/// What one transaction of a ``PostgresServerStorage`` holds: its leased connection, the
/// record writes held back (``PendingRecords``), its savepoints, the id counters it moved,
/// the state it locked and what it learned of the log.
///
/// One per transaction, found through a task-local (``PostgresTransactions/current``), so
/// that one storage runs several transactions at once, each in the task of its request and
/// on a pooled connection of its own: the reads a server lets run beside a write
/// (``ServerStorage/readsConcurrently``). Every storage call runs on its server's executor
/// (``ServerStorage``), so a transaction's state is never touched by two threads at once.
final class PostgresTransaction: @unchecked Sendable {
    /// The leased connection, once the pool has given one; nil outside a transaction (every
    /// statement then fails).
    var connection: PostgresConnection?
    var pending: PendingRecords?
    /// How many savepoints were begun in this transaction (names them).
    var savepoints = 0
    var openSavepoints: [(name: String, held: Int, sent: Bool)] = []
    var idCounters: [Int: (next: Int64, read: Int64)] = [:]
    var windowEntities: (after: Int64, through: Int64, names: [String: Bool])?
    /// The log's bounds of a catch-up, read with the stored-reply lookup before it
    /// (``PostgresServerStorage/reply(client:request:before:)``); dropped by any write.
    var prefetchedBounds: (window: CatchUpWindow, bounds: LogBounds)?
    var lockedState: ServerState?
    /// The state ``PostgresServerStorage/saveState(_:)`` saved last, written once before the
    /// commit (the requests of a group each save theirs).
    var heldState: ServerState?
    /// With writes in parallel (``PostgresWriteOrder/parallel``): the revisions this write
    /// took before it began, `base + 1 ... base + count`, registered as in flight.
    var reserved: (base: Int64, count: Int64)?
    /// With writes in parallel: the ids taken before the write began, by entity position,
    /// the next to give and the end of the block (exclusive).
    var idPool: [Int: (next: Int64, end: Int64)] = [:]
    /// The ids given out in this transaction (``PostgresServerStorage/nextIDs(_:count:)``)
    /// and not written or deleted yet, by entity position: no row, tombstone or log entry
    /// has them (the counters never give an id twice), so their first writes are plain
    /// inserts (``PendingRecords/fresh``).
    var freshIDs: [Int: Set<Int64>] = [:]
    /// With writes in parallel: the keys of the reply locks this transaction holds.
    var lockedReplies: Set<String> = []
    /// Statements sent ahead (``PostgresServerStorage/sendAhead(_:_:)``) and not yet
    /// awaited, in the order sent.
    var ahead: [EventLoopFuture<PostgresQueryResult>] = []
    /// The first failure of a statement sent ahead: every later statement of the transaction
    /// fails with it, a savepoint's rollback included, so that the transaction can only roll
    /// back whole.
    var aheadFailure: (any Error)?
}

/// The transactions in progress in the current task, by storage.
enum PostgresTransactions {
    @TaskLocal static var current: [ObjectIdentifier: PostgresTransaction] = [:]
}
