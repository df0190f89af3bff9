import Dispatch

/// A serial executor of its own for work that blocks, off Swift concurrency's shared pool:
/// the device's store and client, and the server (whose storage may block), run on one each.
///
/// SQLite calls block their thread: applying a sync response writes for a few hundred
/// milliseconds per 100,000 records. Run on the cooperative pool (one thread per core), such
/// work starves every other task of the process. An actor that returns this executor as its
/// `unownedExecutor` runs every job on one serial dispatch queue instead, like a GRDB
/// `DatabaseQueue`: its SQLite work never occupies a shared thread, and it stays serial.
///
/// ```swift
/// actor Owner {
///     let executor = SerialQueueExecutor(label: "app.db")
///     nonisolated var unownedExecutor: UnownedSerialExecutor { executor.asUnownedSerialExecutor() }
/// }
/// ```
public final class SerialQueueExecutor: SerialExecutor, @unchecked Sendable {
    // @unchecked: the only state is the queue, which is thread-safe.
    private let queue: DispatchQueue
    /// Marks each executor's queue, so that code can ask whether it runs on it.
    nonisolated(unsafe) private static let owner = DispatchSpecificKey<ObjectIdentifier>()

    /// An executor on a new serial queue named `label` (the name shows in debuggers).
    public init(label: String) {
        queue = DispatchQueue(label: label)
        queue.setSpecific(key: Self.owner, value: ObjectIdentifier(self))
    }

    /// Whether the caller runs on this executor (tests check that work meant for it does).
    public var isCurrent: Bool { DispatchQueue.getSpecific(key: Self.owner) == ObjectIdentifier(self) }

    public func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        queue.async { job.runSynchronously(on: self.asUnownedSerialExecutor()) }
    }

    public func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    public func checkIsolated() {
        dispatchPrecondition(condition: .onQueue(queue))
    }
}
