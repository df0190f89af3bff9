import FieldMergeServer
import Logging
import PostgresNIO

/// What a ``PostgresLiveListener`` runs: connections one after another, each listening until
/// it is lost, with waits between them.
struct PostgresLiveSession: Sendable {
    let source: PostgresLiveSource
    let applicationName: String
    let logger: Logger
    /// How often the listening connection is asked for the revision, and how long it may take.
    let heartbeat: (interval: Duration, timeout: Duration)
    let deliver: @Sendable (Int64) -> Void

    /// Connects, listens and connects again until the task is cancelled.
    func run(firstDelay: Duration, maxDelay: Duration) async {
        var delay = firstDelay
        var attempt = 0
        while !Task.isCancelled {
            attempt += 1
            let (listened, error) = await listen(id: attempt)
            if Task.isCancelled { break }
            if listened { delay = firstDelay }
            let wait = delay * Double.random(in: 0.5...1)
            let reason = error.map { PostgresConnector.failure($0, doing: "PostgreSQL").message } ?? "the connection ended"
            logger.notice(
                listened ? "live listener lost its PostgreSQL connection; connecting again" : "live listener cannot connect to PostgreSQL; trying again",
                metadata: ["channel": "\(source.channel)", "reason": "\(reason)", "retryIn": "\(wait)"])
            try? await Task.sleep(for: wait)
            delay = min(delay * 2, maxDelay)
        }
    }

    /// One connection: listens, hands over the data set's revision, then every announced one,
    /// until the connection ends or the task is cancelled. Whether it got as far as
    /// listening, and the error that ended it.
    private func listen(id: Int) async -> (listened: Bool, error: (any Error)?) {
        let connection: PostgresConnection
        do {
            connection = try await PostgresConnection.connect(
                configuration: try source.connector.connectionConfiguration(applicationName: applicationName), id: id, logger: logger)
        } catch {
            return (false, error)
        }
        var listened = false
        var failure: (any Error)?
        do {
            try await withTaskCancellationHandler {
                try await connection.listen(on: source.channel) { notifications in
                    // Listening from here on: what committed before is in the revision read now.
                    deliver(try await revision(on: connection))
                    listened = true
                    logger.log(level: id > 1 ? .info : .debug, "live listener listening", metadata: ["channel": "\(source.channel)"])
                    let beat = Task { await beatUntilSilent(connection) }
                    defer { beat.cancel() }
                    for try await notification in notifications {
                        // Another payload on the channel is not a revision: ignored.
                        if let revision = Int64(notification.payload) { deliver(revision) }
                    }
                }
            } onCancel: {
                connection.close().whenComplete { _ in }
            }
        } catch {
            failure = error
        }
        try? await connection.close()
        return (listened, failure)
    }

    /// Reads the revision on `connection` every `heartbeat.interval` and hands it over; closes
    /// the connection when a read is not answered within `heartbeat.timeout` (which ends the
    /// listening with an error: the session connects again).
    private func beatUntilSilent(_ connection: PostgresConnection) async {
        while !Task.isCancelled {
            do { try await Task.sleep(for: heartbeat.interval) } catch { return }
            let answer = await withTaskGroup(of: Int64?.self) { group in
                group.addTask { try? await revision(on: connection) }
                group.addTask {
                    // Closing fails the read, which may otherwise never be answered.
                    guard (try? await Task.sleep(for: heartbeat.timeout)) != nil else { return nil }
                    try? await connection.close()
                    return nil
                }
                let first = await group.next() ?? nil
                group.cancelAll()
                return first
            }
            guard let answer else {
                if Task.isCancelled { return }
                logger.notice(
                    "live listener's PostgreSQL connection did not answer its heartbeat; connecting again",
                    metadata: ["channel": "\(source.channel)", "timeout": "\(heartbeat.timeout)"])
                try? await connection.close()
                return
            }
            deliver(answer)
        }
    }

    /// The data set's revision, read on `connection`.
    private func revision(on connection: PostgresConnection) async throws -> Int64 {
        for try await row in try await connection.query(PostgresQuery(unsafeSQL: source.revisionQuery), logger: logger) {
            return try row.decode(Int64.self)
        }
        throw ServerError(.corrupt, "the data set's revision is missing (\(source.revisionQuery))")
    }
}
