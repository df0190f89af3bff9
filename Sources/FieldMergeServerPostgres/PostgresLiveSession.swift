import FieldMergeServer
import Logging
import PostgresNIO

/// What a ``PostgresLiveListener`` runs: connections one after another, each listening until
/// it is lost, with waits between them.
struct PostgresLiveSession: Sendable {
    let source: PostgresLiveSource
    let applicationName: String
    let logger: Logger
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

    /// The data set's revision, read on `connection`.
    private func revision(on connection: PostgresConnection) async throws -> Int64 {
        for try await row in try await connection.query(PostgresQuery(unsafeSQL: source.revisionQuery), logger: logger) {
            return try row.decode(Int64.self)
        }
        throw ServerError(.corrupt, "the data set's revision is missing (\(source.revisionQuery))")
    }
}
