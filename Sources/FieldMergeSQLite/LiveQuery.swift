#if canImport(Observation)
import Observation
import Synchronization

/// A live query for SwiftUI: ``rows`` holds what the query selects, refreshed on the main
/// actor after every committed transaction that touches its table (``Store/observe(_:bufferingPolicy:)``).
///
/// A view keeps one in its state (`@State var urgent = try LiveQuery(store, Note.all.filter(\.severity >= 3))`)
/// and lists `urgent.rows`. It is `@Observable` (Observation, also on Linux): a view that reads ``rows`` redraws when
/// they change. It stops when released or on ``cancel()``, and its listener on the store
/// goes with it.
@MainActor @Observable
public final class LiveQuery<Row: StoredRecord & Sendable> {
    /// What the query selected last.
    public private(set) var rows: [Row]
    /// Why the query stopped refreshing (a later read failed); nil while it is live.
    public private(set) var error: (any Error)?
    private let task = Mutex<Task<Void, Never>?>(nil)

    /// Follows `values`, a sequence of results such as ``Store/observe(_:bufferingPolicy:)``
    /// (or a sync client's `observe`) returns; ``rows`` is empty until its first result.
    public init<S: AsyncSequence & Sendable>(_ values: S) where S.Element == [Row] {
        rows = []
        start(values)
    }

    /// A live `query` on `store`, which the main actor owns: ``rows`` holds the first
    /// result at once.
    ///
    /// - Parameters:
    ///   - store: The store, used on the main actor.
    ///   - query: What to fetch.
    /// - Throws: What `Store.fetchAll(_:)` of a query throws for the first result.
    public init(_ store: Store, _ query: RecordQuery<Row>) throws(StoreError) {
        let (first, values) = try store.observeAfterFirst(query, bufferingPolicy: .bufferingNewest(1))
        rows = first
        start(values)
    }

    private func start<S: AsyncSequence & Sendable>(_ values: S) where S.Element == [Row] {
        task.withLock {
            $0 = Task { [weak self] in
                do {
                    for try await rows in values {
                        guard let self else { return }
                        self.rows = rows
                    }
                } catch {
                    self?.error = error
                }
            }
        }
    }

    /// Stops refreshing; ``rows`` keeps the last result.
    public func cancel() {
        task.withLock { $0?.cancel() }
    }

    deinit {
        task.withLock { $0?.cancel() }
    }
}
#endif
