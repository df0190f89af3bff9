import FieldMergeServer
import NIOCore

/// The event loop a ``PostgresConnector``'s connections live on, as the executor of the
/// servers on its storages (``PostgresServerStorage/executor``).
///
/// A server on a queue of its own wakes that queue's thread for every answer from
/// PostgreSQL and the event loop's thread for every statement: thread switches on every round
/// trip, a dozen round trips per write, on the data set's lock. On the loop itself, an answer
/// resumes the server on the thread that read it, and the next statement is written from
/// there. PostgresNIO's own async calls are not isolated to anything, so a transaction also
/// prefers the loop as its task executor (``PostgresLoopTaskExecutor``): otherwise they run
/// on Swift concurrency's shared pool, one switch there and one back per statement.
final class PostgresEventLoopExecutor: ServerExecutor {
    let loop: any EventLoop

    init(_ loop: any EventLoop) { self.loop = loop }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        loop.execute { job.runSynchronously(on: self.asUnownedSerialExecutor()) }
    }

    func asUnownedSerialExecutor() -> UnownedSerialExecutor { UnownedSerialExecutor(ordinary: self) }

    var isCurrent: Bool { loop.inEventLoop }

    func checkIsolated() { loop.preconditionInEventLoop() }
}

/// The same event loop as the task executor of a transaction's work
/// (``PostgresServerStorage`` runs each transaction with it as its preference).
final class PostgresLoopTaskExecutor: TaskExecutor {
    let loop: any EventLoop

    init(_ loop: any EventLoop) { self.loop = loop }

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        loop.execute { job.runSynchronously(on: self.asUnownedTaskExecutor()) }
    }
}
