import FieldMerge
import FieldMergeProtocol
@testable import FieldMergeServer
@testable import FieldMergeServerPostgres
import Foundation
import PostgresNIO
import Testing

/// Where the PostgreSQL tests get their database: `FIELDMERGE_POSTGRES_URL`.
///
/// Without it they are skipped, and say so, on a developer's machine; in CI (`CI` set) they
/// run and fail, since a CI that silently skipped them would prove nothing.
enum PostgresTestEnvironment {
    static let url = ProcessInfo.processInfo.environment["FIELDMERGE_POSTGRES_URL"].flatMap { $0.isEmpty ? nil : $0 }
    static let isCI = ProcessInfo.processInfo.environment["CI"].map { !$0.isEmpty } ?? false

    /// Whether the suites run: with a database, or in CI (where a missing one fails them).
    static let shouldRun = url != nil || isCI

    static let missingInCI = "PostgreSQL required in CI: set FIELDMERGE_POSTGRES_URL (Scripts/with-postgres does)"
}

struct PostgresRequired: Error, CustomStringConvertible {
    var description: String { PostgresTestEnvironment.missingInCI }
}

/// A fresh PostgreSQL schema for one test (a random name), its servers, and its removal.
final class PostgresTestDatabase {
    let url: PostgresURL
    private var connectors: [PostgresConnector] = []

    private init(_ url: PostgresURL) { self.url = url }

    /// Runs `body` with a new schema in the test database and drops the schema afterwards,
    /// whether `body` succeeds or throws.
    static func with<T>(_ body: (PostgresTestDatabase) async throws -> T) async throws -> T {
        guard let text = PostgresTestEnvironment.url else { throw PostgresRequired() }
        var url = try PostgresURL(text)
        url.schema = "fm_test_" + String(UInt64.random(in: 0...UInt64.max), radix: 16)
        let database = PostgresTestDatabase(url)
        let result: T
        database.note("body begins")
        do {
            result = try await body(database)
        } catch {
            database.note("body threw \(error)")
            try? await database.drop()
            throw error
        }
        database.note("body returned")
        try await database.drop()
        database.note("dropped")
        return result
    }

    /// A server on the test schema with a connection pool of its own, as another process
    /// serving the same data set would have; with `scopes`, a scoped one. It locks unless
    /// told otherwise (`order`), unlike the storage's default: most suites here check the
    /// lock's revisions without gaps, and the suites of writes in parallel (the default)
    /// say so, or run on both orders.
    func server(
        _ schema: Schema, mode: RevisionServer.Mode = .strict, wall: any WallClock = ManualWallClock(milliseconds: 1_000_000),
        replica: ReplicaID = ReplicaID(0x5E_5E), scopes: ScopeRules? = nil, options base: RevisionServer.Options = RevisionServer.Options(),
        statementTimeout: Duration? = nil, order: PostgresWriteOrder = .locked, reapAfter: Duration = .seconds(5)
    ) async throws -> RevisionServer {
        let connector = PostgresConnector(url, statementTimeout: statementTimeout, applicationName: url.schema, logger: trace("server \(connectors.count)"))
        connectors.append(connector)
        var options = base
        options.mode = mode
        options.scopes = scopes
        let storage = try PostgresServerStorage(connector, order: order)
        storage.reapAfter = reapAfter
        return try await RevisionServer(storage: storage, schema: schema, options: options, replica: replica, wall: wall)
    }

    /// A connector with a pool of its own on the test schema, shut down with the database.
    func connector(maximumConnections: Int = 4) -> PostgresConnector {
        let connector = PostgresConnector(url, maximumConnections: maximumConnections, applicationName: url.schema, logger: trace("connector \(connectors.count)"))
        connectors.append(connector)
        return connector
    }

    /// Runs `sql` with `values` as its bind parameters on a connection of its own, outside
    /// the servers (seeding what a test needs).
    func execute(_ sql: String, _ values: any PostgresDynamicTypeEncodable...) async throws {
        let binds = PostgresServerStorage.binds(values)
        let admin = PostgresConnector(url, logger: trace("execute"))
        do {
            try await admin.client.withConnection { connection in
                _ = try await connection.query(PostgresQuery(unsafeSQL: sql, binds: binds), logger: admin.logger)
            }
        } catch {
            await admin.shutdown()
            throw error
        }
        await admin.shutdown()
    }

    /// The integer in the first column of the first row of `sql` (a count), on a connection
    /// of its own.
    func count(_ sql: String, _ values: any PostgresDynamicTypeEncodable...) async throws -> Int64? {
        let binds = PostgresServerStorage.binds(values)
        let admin = PostgresConnector(url, logger: trace("count"))
        let result: Int64?
        do {
            result = try await admin.client.withConnection { connection in
                for try await row in try await connection.query(PostgresQuery(unsafeSQL: sql, binds: binds), logger: admin.logger) {
                    return try row.decode(Int64.self)
                }
                return nil
            }
        } catch {
            await admin.shutdown()
            throw error
        }
        await admin.shutdown()
        return result
    }

    /// Stops the servers' pools and drops the schema with everything in it.
    private func drop() async throws {
        for (index, connector) in connectors.enumerated() {
            note("connector \(index) shuts down")
            await connector.shutdown()
        }
        connectors = []
        note("schema dropped")
        try await execute("DROP SCHEMA IF EXISTS \"\(url.schema)\" CASCADE")
    }

    /// A logger for the trace of this test (``PostgresTestTrace``), labelled `what`.
    func trace(_ what: String) -> Logger? {
        PostgresTestTrace.logger(url.schema).map { logger in
            var logger = logger
            logger[metadataKey: "of"] = "\(what)"
            return logger
        }
    }

    /// Notes `message` in the trace of this test.
    func note(_ message: String) { PostgresTestTrace.note(url.schema, message) }
}

/// The lists-and-tasks schema of the sync tests, with a field of every type.
func postgresSchema() throws -> Schema {
    try Schema([
        Entity("lists", fields: [Field("name", .text)]),
        Entity("tasks", fields: [
            Field("title", .text), Field("done", .bool), Field("count", .integer, strategy: .counter),
            Field("listID", .reference(to: "lists", onDelete: .cascade)), Field("due", .date), Field("weight", .real),
            Field("tags", .textSet), Field("photo", .blob),
        ]),
    ])
}

/// A change set creating one list named `name` under the temporary id `temporaryID`.
func createList(_ name: String, temporaryID: Int64 = -1) -> ChangeSet {
    let record = WireRecord(id: temporaryID, present: FieldMask.all(count: 1), values: [.text(name)])
    return ChangeSet(entities: [EntityChanges(entity: "lists", create: [temporaryID], records: [record])])
}

/// The revisions of the records in `changeSets`.
func revisions(_ changeSets: [ChangeSet]) -> [Int64] {
    changeSets.flatMap { $0.entities.flatMap { $0.records.compactMap(\.revision) } }
}
