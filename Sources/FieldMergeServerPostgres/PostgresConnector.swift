import FieldMergeServer
import Logging
import NIOPosix
import PostgresNIO

/// The connections to one PostgreSQL database: a `PostgresClient` (a pool) running in a
/// task of its own from ``init(_:maximumConnections:statementTimeout:applicationName:logger:)`` until ``shutdown()``.
///
/// Make one per process and hand it to every ``PostgresServerStorage`` of that database;
/// call ``shutdown()`` once the servers have stopped.
public final class PostgresConnector: Sendable {
    public let url: PostgresURL
    /// The most connections the pool opens.
    public let maximumConnections: Int
    let client: PostgresClient
    /// The one event loop of the pool's connections, which the servers on this connector's
    /// storages run on (``PostgresEventLoopExecutor``): a thread of the connector's own, so
    /// that a server's work never delays the HTTP connections on the process's shared loops.
    let executor: PostgresEventLoopExecutor
    private let loops: MultiThreadedEventLoopGroup
    /// The same loop, for the work of a transaction that is not isolated to its server.
    let taskExecutor: PostgresLoopTaskExecutor
    let logger: Logger
    /// The statements the pool's connections keep prepared.
    let statements = PostgresPreparedStatements()
    private let runner: Task<Void, Never>

    /// Starts the client for `url`. Nothing is connected yet: ``check()`` tries, and the
    /// first transaction connects.
    ///
    /// - Parameters:
    ///   - url: The database.
    ///   - maximumConnections: The most connections the pool opens (a server uses one at a
    ///     time per request in flight).
    ///   - statementTimeout: How long one statement may run before PostgreSQL cancels it
    ///     (`statement_timeout` of every pooled connection; SQLSTATE 57014, a storage error
    ///     the client retries, the transaction having changed nothing); nil, the default,
    ///     leaves the database's own setting.
    ///   - applicationName: How the connections name themselves to PostgreSQL
    ///     (`application_name` in `pg_stat_activity`).
    ///   - logger: Where the client logs its background work; nowhere by default.
    public init(
        _ url: PostgresURL, maximumConnections: Int = 4, statementTimeout: Duration? = nil, applicationName: String = "fieldmerge",
        logger: Logger? = nil
    ) {
        precondition(maximumConnections > 0, "maximumConnections must be positive")
        self.url = url
        self.maximumConnections = maximumConnections
        let logger = logger ?? Logger(label: "FieldMerge.Postgres", factory: { _ in SwiftLogNoOpLogHandler() })
        self.logger = logger
        var configuration = PostgresClient.Configuration(
            host: url.host, port: url.port, username: url.user, password: url.password, database: url.database,
            tls: Self.clientTLS(url.tls))
        configuration.options.maximumConnections = maximumConnections
        configuration.options.connectTimeout = .seconds(10)
        // No keep-alive pings: PostgresNIO 1.33 runs a ping on a task of its own, and one that
        // starts after its connection closed (at ``shutdown()``, or when the server ends the
        // session) writes its query to the closed channel, where nothing ever answers or fails
        // it; the pool's `run()` then never returns and ``shutdown()`` waits forever. Under
        // load, a test run hung that way one time in four. Idle connections close after the
        // pool's idle timeout instead, and a connection found closed when a transaction
        // leases it fails that transaction with a storage error the client retries.
        configuration.options.keepAliveBehavior = nil
        configuration.options.additionalStartupParameters = [("application_name", applicationName)]
        if let statementTimeout {
            let (seconds, attoseconds) = statementTimeout.components
            let milliseconds = max(1, seconds * 1_000 + attoseconds / 1_000_000_000_000_000)
            configuration.options.additionalStartupParameters.append(("statement_timeout", String(milliseconds)))
        }
        loops = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        let loop = loops.next()
        executor = PostgresEventLoopExecutor(loop)
        taskExecutor = PostgresLoopTaskExecutor(loop)
        let client = PostgresClient(configuration: configuration, eventLoopGroup: loop, backgroundLogger: logger)
        self.client = client
        runner = Task { await client.run() }
    }

    /// Closes every connection and stops the client; the storages on it fail from then on.
    public func shutdown() async {
        logger.trace("connector shuts down")
        runner.cancel()
        await runner.value
        logger.trace("connector's client stopped")
        try? await loops.shutdownGracefully()
        logger.trace("connector's loop stopped")
    }

    /// Connects once, outside the pool, so that an unreachable database or refused login is
    /// reported at once with its cause (the pool would keep retrying in the background).
    ///
    /// - Throws: `ServerError/Code/storage` naming the database (without
    ///   the password) and why the connection failed.
    public func check() async throws(ServerError) {
        do {
            let connection = try await PostgresConnection.connect(configuration: try connectionConfiguration(), id: 0, logger: logger)
            try? await connection.close()
        } catch {
            throw Self.failure(error, doing: "cannot connect to \(url)")
        }
    }

    /// The configuration of a connection of its own to the connector's database, outside the
    /// pool, naming itself `applicationName` when given.
    func connectionConfiguration(applicationName: String? = nil) throws -> PostgresConnection.Configuration {
        var configuration = PostgresConnection.Configuration(
            host: url.host, port: url.port, username: url.user, password: url.password, database: url.database,
            tls: try Self.connectionTLS(url.tls))
        configuration.options.connectTimeout = .seconds(10)
        if let applicationName { configuration.options.additionalStartupParameters = [("application_name", applicationName)] }
        return configuration
    }

    private static func clientTLS(_ mode: PostgresURL.TLSMode) -> PostgresClient.Configuration.TLS {
        switch mode {
        case .disable: .disable
        case .prefer: .prefer(.makeClientConfiguration())
        case .require: .require(.makeClientConfiguration())
        }
    }

    private static func connectionTLS(_ mode: PostgresURL.TLSMode) throws -> PostgresConnection.Configuration.TLS {
        switch mode {
        case .disable: .disable
        case .prefer: .prefer(try NIOSSLContext(configuration: .makeClientConfiguration()))
        case .require: .require(try NIOSSLContext(configuration: .makeClientConfiguration()))
        }
    }

    /// `error` as a storage failure whose message says `what` failed and why, in
    /// PostgreSQL's words (a `PSQLError` describes itself only as "Database error").
    static func failure(_ error: any Error, doing what: String) -> ServerError {
        if let error = error as? ServerError { return error }
        guard let error = error as? PSQLError else { return ServerError(.storage, "\(what): \(error)", cause: error) }
        var reasons: [String] = []
        if let message = error.serverInfo?[.message] { reasons.append(message) }
        if let detail = error.serverInfo?[.detail] { reasons.append(detail) }
        if let state = error.serverInfo?[.sqlState] { reasons.append("SQLSTATE \(state)") }
        if reasons.isEmpty { reasons.append(error.code.description) }
        if let underlying = error.underlying { reasons.append("\(underlying)") }
        return ServerError(.storage, "\(what): " + reasons.joined(separator: "; "), cause: error)
    }
}
