import FieldMerge
import Synchronization

/// The store's own listeners to committed changes (``Store/changes(of:)``,
/// ``Store/observe(_:bufferingPolicy:)``), beside ``Store/onChange``, which belongs to the app
/// (or to the sync client that owns the store).
///
/// Each is called on the thread that committed, with the store, right after
/// ``Store/onChange``. Adding and removing is safe from any thread: a sequence's termination
/// (its task cancelled) removes its listener at once.
final class StoreObservers: Sendable {
    typealias Observer = @Sendable (Store, StoreChange) -> Void

    private struct Entries {
        var next = 0
        var observers: [Int: Observer] = [:]
    }

    private let entries = Mutex(Entries())
    private let count = Atomic<Int>(0)

    /// Whether nobody listens (the store then journals nothing for them).
    var isEmpty: Bool { count.load(ordering: .relaxed) == 0 }

    /// How many listen.
    var listening: Int { count.load(ordering: .relaxed) }

    func add(_ observer: @escaping Observer) -> Int {
        entries.withLock { (entries: inout Entries) in
            entries.next += 1
            entries.observers[entries.next] = observer
            count.store(entries.observers.count, ordering: .relaxed)
            return entries.next
        }
    }

    func remove(_ id: Int) {
        entries.withLock { (entries: inout Entries) in
            entries.observers[id] = nil
            count.store(entries.observers.count, ordering: .relaxed)
        }
    }

    /// Calls every listener, outside the lock (a listener may add or remove one).
    func publish(_ change: StoreChange, from store: Store) {
        let observers = entries.withLock { entries in entries.observers.sorted { $0.key < $1.key }.map(\.value) }
        for observer in observers { observer(store, change) }
    }
}
