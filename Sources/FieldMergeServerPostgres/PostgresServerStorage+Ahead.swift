import FieldMergeServer
import PostgresNIO

/// Statements sent ahead: written to the connection without waiting for their answer, so that
/// PostgreSQL inserts one part of a large change set while the server prepares the next
/// (Specs/http.md §8, "Large writes"). The connection runs its statements in the order
/// written; every statement sent the usual way first waits for those sent ahead, and the
/// first of them that failed fails it and every later one of the transaction (a savepoint's
/// rollback too: it would leave the transaction going without the rows that failed), so that
/// the transaction can only roll back whole. A transaction never ends, and never gives its
/// connection back, with a statement sent ahead unanswered.
extension PostgresServerStorage {
    /// Sends `sql` without waiting for its answer (which holds no rows). Unprepared: its text
    /// varies with nothing, but a prepared statement's first use would wait for its parse.
    func sendAhead(_ sql: String, _ binds: PostgresBindings) throws {
        let session = session
        guard let connection = session.connection else { throw ServerError(.storage, "PostgreSQL: a storage call outside a transaction") }
        if let failure = session.aheadFailure { throw failure }
        // Checked and written in one turn of the connection's loop, which the storage runs on:
        // a query written to a closed connection may never be answered (nor failed).
        guard !connection.isClosed else { throw ServerError(.storage, "PostgreSQL: the connection was closed") }
        statementCount += 1
        statementsSentAhead += 1
        let answer: EventLoopFuture<PostgresQueryResult> = connection.query(PostgresQuery(unsafeSQL: sql, binds: binds), logger: connector.logger)
        session.ahead.append(answer)
    }

    /// Waits for every statement sent ahead; throws the first failure among them (or an
    /// earlier one), as a storage error.
    nonisolated(nonsending) func awaitAhead() async throws {
        let session = session
        guard !session.ahead.isEmpty || session.aheadFailure != nil else { return }
        while !session.ahead.isEmpty {
            let answer = session.ahead.removeFirst()
            do {
                _ = try await answer.get()
            } catch {
                if session.aheadFailure == nil { session.aheadFailure = PostgresConnector.failure(error, doing: "PostgreSQL failed") }
            }
        }
        if let failure = session.aheadFailure { throw failure }
    }

    /// Suspends until the connection's loop has had a turn at its sockets. A `Task.yield()`
    /// would not do: the loop runs the tasks ready, the one yielding again among them, until
    /// none is left before it looks at its sockets; a task due a little later lets it look.
    nonisolated(nonsending) func loopTurn() async {
        try? await connector.executor.loop.scheduleTask(in: .microseconds(20)) {}.futureResult.get()
    }

    /// Before a rollback: waits for every statement sent ahead, whatever they answer, and
    /// forgets their failure (the rollback ends it).
    nonisolated(nonsending) func drainAhead() async {
        _ = try? await awaitAhead()
        session.aheadFailure = nil
    }
}

extension PendingRecords {
    /// From how many records a run of writes or deletes is sent ahead, as soon as it has them
    /// (``PostgresServerStorage/sendAhead(_:_:)``), instead of with the next statement: large
    /// enough that a change set of 1,000 records still goes in one statement with its reply.
    static let aheadRun = 2_048
    /// How many records a run gains between two turns of the connection's loop.
    static let aheadTurn = 256
}
