import ArgumentParser
import FieldMerge
import FieldMergeJSON
import FieldMergeSQLiteDriver
import FieldMergeServerAuth
import FieldMergeServerHTTP
import FieldMergeProtocol
import FieldMergeServer
import FieldMergeServerSQLite
import FieldMergeServerPostgres
import Foundation
import Synchronization

/// `serve`: the command `fieldmerge-server serve` runs, and an app's own executable through
/// ``FieldMergeServe``, which gives it the app's schema and access rules
/// (``ServeConfiguration``). A subcommand of an app's own command tree runs inside
/// ``FieldMergeServe/withConfiguration(_:isolation:operation:)``.
public struct ServeCommand: AsyncParsableCommand {
    public static var configuration: CommandConfiguration {
        CommandConfiguration(
            commandName: FieldMergeServe.context?.commandName ?? "serve",
            abstract: "Serves POST /sync for a RevisionServer over HTTP.",
            discussion: """
                Opens (or creates) the server's SQLite database (--db), or its data set in \
                PostgreSQL (--postgres, which several serve processes can share), and serves the \
                revision protocol on http://HOST:PORT/sync, plus GET /health (Specs/http.md). Prints \
                one line with the address once listening; logs each sync on standard error. SIGINT \
                or SIGTERM stops accepting connections and lets requests in flight finish (each is \
                one transaction). A SQLite file made with an older version of the schema migrates \
                (Specs/schema.md). With --jwt-secret-file, --jwt-secret-env or --jwks every sync \
                needs a bearer token (JWT); --policy limits which roles may write which entities \
                (Specs/http.md, "Authentication and permissions"). --tenants DIR instead of --db serves \
                one SQLite file per tenant, the tenant taken from each token (Specs/http.md, "Tenants"). \
                --metrics serves GET /metrics (Prometheus), behind its own token or for loopback \
                clients only; each sync's log line carries a request id (X-Request-ID), and \
                --log-format json writes the log as JSON lines (Specs/http.md, "Metrics and logs"). --console serves \
                an operator's web page at /console (Specs/http.md, "The operator's console"). Exit codes: 2 for a bad schema, \
                policy, key file or metrics token, 1 when the database cannot be opened or the address cannot be bound.
                """
        )
    }

    public init() {}

    enum Mode: String, ExpressibleByArgument, CaseIterable {
        case strict, merge
        var serverMode: RevisionServer.Mode { self == .strict ? .strict : .merge }
    }

    @Option(help: "The TCP port; 0 picks a free one.")
    var port: Int = 8080

    @Option(help: "The server's SQLite database, created when missing.")
    var db: String?

    @Option(help: "Keep the data set in PostgreSQL instead of SQLite: postgres://user:password@host:port/database?sslmode=disable (several serve processes may share it).")
    var postgres: String?

    @Option(help: "The PostgreSQL schema of the data set (default: the URL's schema parameter, else public).")
    var postgresSchema: String?

    @Option(help: "With --postgres: the most connections this process opens to PostgreSQL (default 4).")
    var postgresPool: Int?

    @Option(help: "With --postgres: seconds one statement may run before PostgreSQL cancels it (the request then fails retryably, having changed nothing); 0 for the database's own setting (default 30).")
    var postgresStatementTimeout: Double?

    @Option(help: "With --postgres: at most how many write requests that queue behind each other are answered in one transaction (group commit, Specs/http.md §8); 1 answers each alone (default 32).")
    var postgresWriteGroup: Int?

    @Option(help: "With --postgres: how the writes of every process on the data set are ordered: parallel (each takes its revisions first; transactions run beside each other, lock only the records they change and commit in any order; Specs/http.md §8, \"Writes in parallel\"; the default) or locked (one after another, revisions with no gap). A data set once opened parallel stays so: processes that lock then refuse it.")
    var postgresOrder: PostgresWriteOrder?

    @Option(help: "strict (a stale change set is a conflict, as in the case study) or merge.")
    var mode: Mode = .strict

    @Option(help: "A JSON schema document (Specs/schema.md); when omitted, the league schema of `fieldmerge simulate` (Specs/simulation.md). An app's own serve executable with its schema in Swift refuses it.")
    var schema: String?

    @Flag(help: "Sync every commit to the disk (SQLite synchronous=FULL): answered requests survive a power loss, not only a crash of the process; each request then waits for the disk's flush.")
    var durable = false

    @Option(help: "Before serving, fill an empty data set with this many made-up records of --seed-entity (for measuring large downloads); a data set that holds data is left as it is.")
    var seedRecords: Int = 0

    @Option(help: "The entity --seed-records fills (default: the schema's first entity).")
    var seedEntity: String?

    @Option(help: "The address to bind; 127.0.0.1 serves this machine only.")
    var host: String = "127.0.0.1"

    @OptionGroup(title: "Authentication and permissions")
    var auth: ServeAuthOptions

    @OptionGroup(title: "Tenants")
    var tenantOptions: ServeTenantOptions

    @OptionGroup(title: "Slow and idle clients")
    var connections: ServeConnectionOptions

    @OptionGroup(title: "Stored replies")
    var replies: ServeReplyOptions

    @OptionGroup(title: "Live sync")
    var live: ServeLiveOptions

    @OptionGroup(title: "Metrics and logs")
    var observability: ServeMetricsOptions

    @OptionGroup(title: "Operator's console")
    var consoleOptions: ServeConsoleOptions

    @OptionGroup(title: "Attachments")
    var attachmentOptions: ServeAttachmentOptions

    public func validate() throws {
        try validateAppConfiguration()
        guard (0...65_535).contains(port) else { throw ValidationError("--port must be within 0...65535") }
        try tenantOptions.validate(db: db, postgres: postgres, seedRecords: seedRecords, auth: auth)
        guard tenantOptions.tenants != nil || (db == nil) != (postgres == nil) else {
            throw ValidationError("give either --db FILE, --postgres URL or --tenants DIR")
        }
        if postgres == nil, postgresSchema != nil { throw ValidationError("--postgres-schema needs --postgres") }
        if postgres == nil, postgresPool != nil || postgresStatementTimeout != nil || postgresWriteGroup != nil || postgresOrder != nil {
            throw ValidationError("--postgres-pool, --postgres-statement-timeout, --postgres-write-group and --postgres-order need --postgres")
        }
        if postgresOrder == .parallel, tenantOptions.tenants != nil {
            throw ValidationError("--postgres-order parallel is for one data set, not yet for --tenants")
        }
        if let postgresWriteGroup, !(1...1_000).contains(postgresWriteGroup) {
            throw ValidationError("--postgres-write-group must be within 1...1000")
        }
        if let postgresPool, !(1...1_000).contains(postgresPool) { throw ValidationError("--postgres-pool must be within 1...1000") }
        if let postgresStatementTimeout, !(0...86_400).contains(postgresStatementTimeout) {
            throw ValidationError("--postgres-statement-timeout must be within 0...86400 seconds")
        }
        if postgres != nil, durable { throw ValidationError("--durable is for SQLite; PostgreSQL's durability is its own settings'") }
        if let postgres {
            do { _ = try PostgresURL(postgres) } catch { throw ValidationError("--postgres: \(error)") }
        }
        guard seedRecords >= 0 else { throw ValidationError("--seed-records must not be negative") }
        if seedEntity != nil, seedRecords == 0 { throw ValidationError("--seed-entity needs --seed-records") }
        try auth.validate()
        try connections.validate()
        try replies.validate()
        try live.validate()
        try observability.validate()
        try consoleOptions.validate()
        try attachmentOptions.validate()
    }

    public func run() async throws {
        observability.bootstrapLogging()
        let schema = try loadSchema()
        let metrics = try observability.load(schema: schema)
        var options = RevisionServer.Options()
        options.probe = metrics?.probe
        options.mode = mode.serverMode
        if let postgresWriteGroup { options.writeGroup = postgresWriteGroup }
        replies.apply(to: &options)
        live.apply(to: &options)
        try applyAccess(to: &options, schema: schema)
        let verifier = try await auth.loadVerifier(customClaims: options.scopes?.claims ?? [])
        if let folder = tenantOptions.tenants {
            return try await serveTenants(in: folder, schema: schema, options: options, verifier: verifier, metrics: metrics)
        }
        let pool = try postgresConnector()
        let attachments: SyncHTTPServer.Attachments?
        do {
            attachments = try await attachmentOptions.load(schema: schema, database: postgres == nil ? db : nil, postgres: pool.map { ($0, postgresSchema) })
        } catch {
            await pool?.shutdown()
            Self.fail("cannot open the attachment store: \(error)")
            throw ExitCode(1)
        }
        options.attachments = attachments?.store
        let (server, connector, location) = try await openServer(schema: schema, options: options, connector: pool)
        for change in server.migrations {
            FileHandle.standardError.write(Data("fieldmerge serve: migrated \(location) to schema version \(schema.version): \(change)\n".utf8))
        }
        if !server.olderSchemas.isEmpty {
            let versions = server.olderSchemas.map { String($0.schema.version) }.joined(separator: ", ")
            FileHandle.standardError.write(Data("fieldmerge serve: also answers clients on schema version \(versions), each in its own schema\n".utf8))
        }
        if seedRecords > 0 { try await seed(server, schema: schema, location: location) }
        let listening = ListeningFlag()
        let mode = mode
        var configuration = SyncHTTPServer.Configuration(host: host, port: port)
        connections.apply(to: &configuration)
        live.apply(to: &configuration)
        configuration.metrics = metrics
        configuration.console = consoleOptions.load(
            storage: postgres == nil ? "SQLite \(location)" : "PostgreSQL \(location)", sqlite: postgres == nil ? location : nil)
        configuration.attachments = attachments
        let http = SyncHTTPServer(
            server: server, configuration: configuration,
            middleware: { router in
                if let verifier { router.add(middleware: BearerAuthenticator(verifier: verifier)) }
            },
            onListening: Self.announce(listening, serving: "database \(location)", mode: mode))
        if verifier == nil { http.logger.notice("no authentication: any client may sync (see --jwt-secret-file, --jwt-secret-env, --jwks)") }
        if configuration.console != nil {
            let access = verifier == nil ? "loopback clients only" : "tokens with the role \(consoleOptions.consoleRole ?? "admin")"
            http.logger.notice("console at /console, for \(access)")
        }
        let sweeper = attachmentOptions.sweeper(server, attachments: attachments, logger: http.logger)
        try await serve(http, listening: listening) {
            sweeper?.cancel()
            await sweeper?.value
            await connector?.shutdown()
        }
    }

    /// Prints the line saying where the server listens, once it does.
    static func announce(_ listening: ListeningFlag, serving: String, mode: Mode) -> @Sendable (String, Int) async -> Void {
        { host, port in
            listening.set()
            // Written unbuffered: a script waiting for this line sees it at once.
            let line = "fieldmerge serve: listening on http://\(host):\(port)/sync (\(serving), \(mode.rawValue) mode)\n"
            FileHandle.standardOutput.write(Data(line.utf8))
        }
    }

    /// Serves until SIGINT or SIGTERM, then runs `finish`; exits with code 1 when the
    /// address cannot be bound or serving fails.
    func serve(_ http: SyncHTTPServer, listening: ListeningFlag, finish: () async -> Void) async throws {
        do {
            try await http.runUntilShutdownSignal()
            await finish()
        } catch {
            await finish()
            if listening.isSet {
                Self.fail("stopped on an error: \(error)")
            } else {
                Self.fail("cannot listen on \(host):\(port): \(error)")
            }
            throw ExitCode(1)
        }
    }

    /// The connections to `--postgres`'s database, or nil with `--db`.
    private func postgresConnector() throws -> PostgresConnector? {
        guard let postgres else { return nil }
        let timeout = postgresStatementTimeout ?? 30
        do {
            return PostgresConnector(
                try PostgresURL(postgres), maximumConnections: postgresPool ?? 4,
                statementTimeout: timeout > 0 ? .milliseconds(Int64(timeout * 1_000)) : nil)
        } catch {
            Self.fail("\(error)")
            throw ExitCode(1)
        }
    }

    /// The server on SQLite (`--db`) or PostgreSQL (`--postgres`, on `connector`), the
    /// PostgreSQL connector and live listener to shut down at the end, and what to call the
    /// database; exits with code 1 when it cannot open.
    private func openServer(
        schema: Schema, options: RevisionServer.Options, connector: PostgresConnector?
    ) async throws -> (RevisionServer, ServePostgres?, String) {
        if let connector {
            let url = connector.url
            do {
                let storage = try PostgresServerStorage(connector, schema: postgresSchema, order: postgresOrder ?? .parallel)
                let source = storage.liveSource
                let server = try await RevisionServer(storage: storage, schema: schema, options: options)
                return (server, ServePostgres(connector, source: source, server: server), "\(url.description.split(separator: "?")[0]) schema \(postgresSchema ?? url.schema)")
            } catch {
                await connector.shutdown()
                Self.fail("cannot open the PostgreSQL data set: \(error)")
                throw ExitCode(1)
            }
        }
        let db = db ?? ""
        do {
            var database = Database.Options()
            database.durableAcrossPowerLoss = durable
            return (try RevisionServer(.file(path: db), schema: schema, options: options, database: database), nil, db)
        } catch {
            Self.fail("cannot open the database \(db): \(error)")
            throw ExitCode(1)
        }
    }

    /// `--seed-records`: fills an empty data set; exits with code 2 for an unknown entity,
    /// 1 when the server refuses the records.
    private func seed(_ server: RevisionServer, schema: Schema, location: String) async throws {
        let entity = seedEntity == nil ? schema.entities.first : schema.entity(seedEntity!)
        guard let entity else {
            Self.fail("--seed-entity \(seedEntity ?? ""): no such entity in the schema")
            throw ExitCode(2)
        }
        do {
            let start = ContinuousClock.now
            let created = try await ServeSeed(records: seedRecords, entity: entity).seed(server)
            let line = created == 0
                ? "fieldmerge serve: \(location) already holds data; not seeded\n"
                : "fieldmerge serve: seeded \(created) \(entity.name) records in \(ContinuousClock.now - start)\n"
            FileHandle.standardError.write(Data(line.utf8))
        } catch {
            Self.fail("cannot seed: \(error)")
            throw ExitCode(1)
        }
    }

    static func fail(_ message: String) {
        FileHandle.standardError.write(Data("fieldmerge serve: \(message)\n".utf8))
    }
}

/// Whether the server got as far as listening: a failure after it is no failure to bind.
final class ListeningFlag: Sendable {
    private let value = Mutex(false)
    func set() { value.withLock { $0 = true } }
    var isSet: Bool { value.withLock { $0 } }
}

extension PostgresWriteOrder: ExpressibleByArgument {}
