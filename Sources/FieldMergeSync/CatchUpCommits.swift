/// When a catch-up commits the pages it applied (Specs/store.md, "Several catch-up pages
/// per transaction").
///
/// A catch-up applies its pages in one store transaction and commits it once a page ends
/// ``interval`` or more after the transaction began, or once it holds ``records`` or more
/// records, and at the end of the catch-up. The revision the store stands at commits with
/// the records, so a crash loses at most the pages not committed yet, which the next sync
/// fetches again. The transaction is never in anyone's way for long: an app's
/// ``SyncClient/write(_:)`` (and every other call on the client that uses the store) commits
/// it first and then runs, between two pages; while the catch-up waits for the network it
/// commits when ``interval`` is over. Reads of a file store never wait for it.
///
/// `CatchUpCommits(interval: .zero, records: 1)` commits after every page.
public struct CatchUpCommits: Sendable, Equatable {
    /// Commit once a page ends this long (or longer) after the transaction began; while
    /// waiting for the next page, commit when it is over. 250 ms by default.
    public var interval: Duration
    /// Commit once the transaction holds this many records (or more). 100,000 by default.
    public var records: Int

    public init(interval: Duration = .milliseconds(250), records: Int = 100_000) {
        self.interval = interval
        self.records = records
    }
}

/// The time a catch-up reads to decide when to commit (tests inject their own).
package protocol CommitClock: Sendable {
    /// Now, on a clock that never goes back (any origin).
    var now: Duration { get }
    /// Returns at `deadline` (on the same clock), or throws when the task is cancelled.
    func sleep(until deadline: Duration) async throws
}

/// `ContinuousClock`, read as the time since the clock was made.
package struct ContinuousCommitClock: CommitClock {
    private let origin = ContinuousClock.now

    package init() {}

    package var now: Duration { ContinuousClock.now - origin }

    package func sleep(until deadline: Duration) async throws {
        try await ContinuousClock().sleep(until: origin + deadline)
    }
}

/// The catch-up's open transaction: when it began and what it holds.
struct CatchUpWindow {
    /// When the transaction began (``CommitClock/now``).
    var began: Duration
    /// Tells this transaction from later ones (a timer commits only the one it was set for).
    var generation: Int
    var records = 0
    var pages = 0
    /// While a page is being applied: the connection's change count before it, to tell
    /// whether a failure came before the page wrote anything.
    var changesBeforePage: Int?
}
