import FieldMerge
import FieldMergeProtocol
@testable import FieldMergeServer
@testable import FieldMergeServerPostgres
import PostgresNIO
import Testing

/// A write that runs alone on a data set whose writes run in parallel (compaction here; an
/// import and the roots of new scope rules run the same way): it waits for the writes in
/// flight, and the writes that come after it wait for it (Specs/http.md §8, "Writes in
/// parallel").
@Suite(.enabled(if: PostgresTestEnvironment.shouldRun, "FIELDMERGE_POSTGRES_URL is not set: PostgreSQL suite skipped (Scripts/with-postgres swift test runs it)"))
struct ParallelAloneWriteTests {
    let schema: Schema
    init() throws { schema = try postgresSchema() }

    @Test func compaction_waitsForTheWritesInFlight_andTheWritesAfterItWaitForIt() async throws {
        try await PostgresTestDatabase.with { database in
            let a = try await database.server(schema, order: .parallel)
            let b = try await database.server(schema, replica: ReplicaID(0x5E_5F), order: .parallel)
            _ = try await a.handle(SyncRequest(maxRevision: 0, changeSets: [createList("held")]))
            let rename = SyncRequest(maxRevision: 1, changeSets: [ConcurrentWriteTests.renameList(1, to: "renamed", at: 1)], clientID: "a", requestID: "1")
            let (renamed, compactedWhileHeld, createdWhileHeld, finish) = try await ParallelWriteTests.holdingList(1, of: database) { connection, log in
                // a's rename has taken revision 2 and waits for the list's row.
                let renaming = Task { try await a.handle(rename) }
                try await PostgresRevisionTests.untilWaitingForALock(database.url.schema, on: connection, logger: log)
                // b's compaction holds the state rows and waits for revision 2 to end.
                let compacted = Countdown(1)
                let compacting = Task {
                    defer { compacted.countDown() }
                    return try await b.compact(through: 1)
                }
                // It ends, or is seen waiting for the revisions in flight.
                for _ in 0..<3_000 where !compacted.isOver {
                    if try await Self.waitingForWritesInFlight(database.url.schema, on: connection, logger: log) { break }
                    try await Task.sleep(for: .milliseconds(10))
                }
                let compactedWhileHeld = compacted.isOver
                // A write that comes now cannot take a revision before the compaction ends.
                let created = Countdown(1)
                let creating = Task {
                    defer { created.countDown() }
                    return try await b.handle(SyncRequest(maxRevision: 1, changeSets: [createList("after")], clientID: "b", requestID: "1"))
                }
                // It waits for a lock (or, were it not held back, ends).
                for _ in 0..<3_000 where !created.isOver {
                    if try await Self.waiting(database.url.schema, on: connection, logger: log) >= 2 { break }
                    try await Task.sleep(for: .milliseconds(10))
                }
                let createdWhileHeld = created.isOver
                return { (try await renaming.value, compactedWhileHeld, createdWhileHeld, (try await compacting.value, try await creating.value)) }
            }
            let (report, created) = finish
            #expect(!compactedWhileHeld, "the compaction ran while revision 2 was in flight")
            #expect(!createdWhileHeld, "a write took a revision while the compaction ran")
            #expect(revisions(Array(renamed.changeSets.suffix(1))) == [2])
            #expect(report.through == 1)
            #expect(revisions(Array(created.changeSets.suffix(1))) == [3])
            // Nothing is in flight any more, and every revision reads back.
            #expect(try await database.count("SELECT count(*) FROM \"\(database.url.schema)\".\"__fm_inflight\"") == 0)
            let after = try await a.handle(SyncRequest(maxRevision: 0, changeSets: []))
            #expect(after.maxRevision == 3)
            #expect(Set(after.changeSets.flatMap { $0.entities.flatMap(\.records) }.map(\.values)) == [[.text("renamed")], [.text("after")]])
        }
    }

    /// What tools that open a data set beside its servers go by (`fieldmerge-server admin`).
    @Test func theRecordedOrder_isParallel_onceAServerThatWritesInParallelOpenedTheDataSet() async throws {
        try await PostgresTestDatabase.with { database in
            let connector = database.connector()
            #expect(try await PostgresServerStorage.recordedOrder(connector) == .locked, "no data set yet")
            _ = try await database.server(schema)
            #expect(try await PostgresServerStorage.recordedOrder(connector) == .locked)
            let a = try await database.server(schema, order: .parallel)
            #expect(try await PostgresServerStorage.recordedOrder(connector) == .parallel)
            // A compaction through a storage opened as recorded runs; one that locks is refused.
            _ = try await a.handle(SyncRequest(maxRevision: 0, changeSets: [createList("x")]))
            let tool = try await RevisionServer(storage: try PostgresServerStorage(connector, order: .parallel), schema: schema)
            #expect(try await tool.compact(through: 1).through == 1)
            await #expect(throws: ServerError.self) {
                _ = try await RevisionServer(storage: try PostgresServerStorage(database.connector(), order: .locked), schema: schema)
            }
        }
    }

    /// How many backends of `application` wait for a lock now. (Inside a transaction
    /// PostgreSQL answers `pg_stat_activity` from the snapshot it took first: each look clears it.)
    static func waiting(_ application: String, on connection: PostgresConnection, logger: Logger) async throws -> Int64 {
        _ = try await connection.query("SELECT pg_stat_clear_snapshot()", logger: logger).collect()
        let query = PostgresQuery(
            unsafeSQL: "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'",
            binds: PostgresServerStorage.binds(application))
        return try await connection.query(query, logger: logger).collect().first?.decode(Int64.self) ?? 0
    }

    /// Whether a backend of `application` is inside a write that runs alone, asking how many
    /// revisions are still in flight (its statement, `waitForWritesInFlight()`, is the last it ran).
    static func waitingForWritesInFlight(_ application: String, on connection: PostgresConnection, logger: Logger) async throws -> Bool {
        _ = try await connection.query("SELECT pg_stat_clear_snapshot()", logger: logger).collect()
        let query = PostgresQuery(
            unsafeSQL: "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND xact_start IS NOT NULL "
                + "AND query LIKE '%\"__fm_inflight\" i WHERE NOT EXISTS (SELECT 1 FROM reaped r%'",
            binds: PostgresServerStorage.binds(application))
        return try await connection.query(query, logger: logger).collect().first?.decode(Int64.self) ?? 0 > 0
    }
}
