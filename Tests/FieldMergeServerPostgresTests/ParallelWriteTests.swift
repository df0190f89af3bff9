import FieldMerge
import FieldMergeProtocol
@testable import FieldMergeServer
@testable import FieldMergeServerPostgres
import PostgresNIO
import Testing

/// Writes in parallel (`PostgresWriteOrder.parallel`, Specs/http.md §8, "Writes in
/// parallel"): a write takes its revision before its transaction begins and commits in any
/// order; a catch-up stops below the smallest revision still in flight; a server killed
/// mid-write holds that watermark until a write or a read reaps its revision, and leaves a gap.
@Suite(.enabled(if: PostgresTestEnvironment.shouldRun, "FIELDMERGE_POSTGRES_URL is not set: PostgreSQL suite skipped (Scripts/with-postgres swift test runs it)"))
struct ParallelWriteTests {
    let schema: Schema
    init() throws { schema = try postgresSchema() }

    @Test func aWriteInFlight_holdsCatchUpsBelowIt_whileAWriteBesideItCommits() async throws {
        try await PostgresTestDatabase.with { database in
            let a = try await database.server(schema, order: .parallel)
            let b = try await database.server(schema, replica: ReplicaID(0x5E_5F), order: .parallel)
            _ = try await a.handle(SyncRequest(maxRevision: 0, changeSets: [createList("held")]))
            let rename = SyncRequest(maxRevision: 1, changeSets: [ConcurrentWriteTests.renameList(1, to: "renamed", at: 1)], clientID: "a", requestID: "1")
            let (renamed, beside, during) = try await Self.holdingList(1, of: database) { connection, log in
                // a's rename has taken revision 2 and waits for the list's row.
                let renaming = Task { try await a.handle(rename) }
                try await PostgresRevisionTests.untilWaitingForALock(database.url.schema, on: connection, logger: log)
                // b's write does not wait for it: it commits revision 3.
                let beside = try await b.handle(SyncRequest(maxRevision: 1, changeSets: [createList("beside")], clientID: "b", requestID: "1"))
                let during = try await b.handle(SyncRequest(maxRevision: 0, changeSets: []))
                return { (try await renaming.value, beside, during) }
            }
            #expect(revisions(Array(beside.changeSets.suffix(1))) == [3])
            // Revision 2 was in flight below it: b's answer, and a catch-up meanwhile, stop at 1.
            #expect(beside.maxRevision == 1)
            #expect(during.maxRevision == 1)
            #expect(during.changeSets.flatMap { $0.entities.flatMap(\.records) }.map(\.values) == [[.text("held")]])
            // a's rename committed after b's write, with the revision it took first.
            #expect(renamed.changeSets.last?.conflict != true)
            #expect(revisions(Array(renamed.changeSets.suffix(1))) == [2])
            let after = try await b.handle(SyncRequest(maxRevision: 1, changeSets: []))
            #expect(after.maxRevision == 3)
            #expect(revisions(after.changeSets).sorted() == [2, 3])
            // The stored replies are exact, from either server.
            #expect(try await b.handle(rename).changeSets.last == renamed.changeSets.last)
        }
    }

    @Test func aWriteIsAnswered_whileAnotherWriteOfTheSameServerWaitsForARecord() async throws {
        try await PostgresTestDatabase.with { database in
            let a = try await database.server(schema, order: .parallel)
            _ = try await a.handle(SyncRequest(maxRevision: 0, changeSets: [createList("held")]))
            let rename = SyncRequest(maxRevision: 1, changeSets: [ConcurrentWriteTests.renameList(1, to: "renamed", at: 1)], clientID: "x", requestID: "1")
            let (renamed, beside) = try await Self.holdingList(1, of: database) { connection, log in
                let renaming = Task { try await a.handle(rename) }
                try await PostgresRevisionTests.untilWaitingForALock(database.url.schema, on: connection, logger: log)
                // The same server answers another client's write meanwhile (one at a time, it
                // would wait behind the rename; a bound keeps that from hanging the test).
                let create = SyncRequest(maxRevision: 1, changeSets: [createList("beside")], clientID: "y", requestID: "1")
                let creating = Task { try await a.handle(create) }
                let done = Countdown(1)
                Task { _ = try? await creating.value; done.countDown() }
                for _ in 0..<3_000 where !done.isOver { try await Task.sleep(for: .milliseconds(10)) }
                let answeredMeanwhile = done.isOver
                return { (try await renaming.value, answeredMeanwhile ? try await creating.value : nil) }
            }
            let answered = try #require(beside, "the write waited for the other write of its server")
            #expect(revisions(Array(answered.changeSets.suffix(1))) == [3])
            #expect(answered.maxRevision == 1)
            #expect(revisions(Array(renamed.changeSets.suffix(1))) == [2])
            let after = try await a.handle(SyncRequest(maxRevision: 1, changeSets: []))
            #expect(after.maxRevision == 3)
            #expect(revisions(after.changeSets).sorted() == [2, 3])
        }
    }

    @Test func aServerKilledMidWrite_holdsTheWatermark_untilItsRevisionIsReaped_andLeavesAGap() async throws {
        try await PostgresTestDatabase.with { database in
            let a = try await database.server(schema, order: .parallel)
            let b = try await database.server(schema, replica: ReplicaID(0x5E_5F), order: .parallel, reapAfter: .zero)
            _ = try await a.handle(SyncRequest(maxRevision: 0, changeSets: [createList("held")]))
            let rename = SyncRequest(maxRevision: 1, changeSets: [ConcurrentWriteTests.renameList(1, to: "lost", at: 1)], clientID: "a", requestID: "1")
            let failed = try await Self.holdingList(1, of: database) { connection, log in
                let renaming = Task { () async -> Result<SyncResponse, any Error> in
                    do { return .success(try await a.handle(rename)) } catch { return .failure(error) }
                }
                try await PostgresRevisionTests.untilWaitingForALock(database.url.schema, on: connection, logger: log)
                // The backend of a's write dies with its revision in flight, as when its server is killed.
                try await connection.query(
                    PostgresQuery(
                        unsafeSQL: "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'",
                        binds: PostgresServerStorage.binds(database.url.schema)), logger: log)
                let result = await renaming.value
                return { result }
            }
            guard case .failure = failed else { Issue.record("the killed write answered"); return }
            try await Self.untilNoBackendWaits(database)
            // Revision 2 is still in flight: a catch-up stops below it, and then, having found it
            // in flight for longer than the bound with its backend gone, reaps it.
            #expect(try await b.handle(SyncRequest(maxRevision: 0, changeSets: [])).maxRevision == 1)
            #expect(try await b.handle(SyncRequest(maxRevision: 0, changeSets: [])).maxRevision == 2)
            // The next write goes on past the gap.
            let created = try await b.handle(SyncRequest(maxRevision: 1, changeSets: [createList("after")], clientID: "b", requestID: "1"))
            #expect(revisions(Array(created.changeSets.suffix(1))) == [3])
            #expect(created.maxRevision == 3)
            let after = try await a.handle(SyncRequest(maxRevision: 0, changeSets: []))
            #expect(after.maxRevision == 3)
            #expect(after.changeSets.flatMap { $0.entities.flatMap(\.records) }.map(\.values) == [[.text("held")], [.text("after")]])
            #expect(revisions(after.changeSets) == [1, 3])
        }
    }

    @Test func aRecordWrittenFirstByALaterRevision_runsTheWriteAgainWithNewRevisions() async throws {
        try await PostgresTestDatabase.with { database in
            let a = try await database.server(schema, mode: .merge, order: .parallel)
            let b = try await database.server(schema, mode: .merge, replica: ReplicaID(0x5E_5F), order: .parallel)
            _ = try await a.handle(SyncRequest(maxRevision: 0, changeSets: [RoundTripCountTests.lists(2)]))
            // a renames list 2, then list 1, in two change sets (revisions 2 and 3); list 2 is held.
            let both = SyncRequest(
                maxRevision: 1, changeSets: [ConcurrentWriteTests.renameList(2, to: "a2", at: 1), ConcurrentWriteTests.renameList(1, to: "a1", at: 1)],
                clientID: "a", requestID: "1")
            let (renamed, beside) = try await Self.holdingList(2, of: database) { connection, log in
                let renaming = Task { try await a.handle(both) }
                try await PostgresRevisionTests.untilWaitingForALock(database.url.schema, on: connection, logger: log)
                // Meanwhile b renames list 1 at revision 4 and commits first.
                let beside = try await b.handle(SyncRequest(
                    maxRevision: 1, changeSets: [ConcurrentWriteTests.renameList(1, to: "b1", at: 1)], clientID: "b", requestID: "1"))
                return { (try await renaming.value, beside) }
            }
            #expect(revisions(Array(beside.changeSets.suffix(1))) == [4])
            // a found list 1 at revision 4, past its own 2 and 3: written at 3 it would have gone
            // back, and a's device, told 3, would never get b's change. a ran again, at 5 and 6.
            #expect(revisions(Array(renamed.changeSets.suffix(2))) == [5, 6])
            #expect(renamed.changeSets.suffix(2).allSatisfy { $0.conflict != true })
            let after = try await b.handle(SyncRequest(maxRevision: 0, changeSets: []))
            #expect(after.maxRevision == 6)
            let lists = Dictionary(uniqueKeysWithValues: after.changeSets.flatMap { $0.entities.flatMap(\.records) }.map { ($0.id, $0.revision) })
            #expect(lists == [1: 6, 2: 5])
        }
    }

    @Test func aRequestAndItsRetryArrivingAtTwoServersAtOnce_areAppliedOnce_andAnsweredAlike() async throws {
        try await PostgresTestDatabase.with { database in
            let a = try await database.server(schema, order: .parallel)
            let b = try await database.server(schema, replica: ReplicaID(0x5E_5F), order: .parallel)
            let rounds = 12
            for round in 0..<rounds {
                let request = SyncRequest(maxRevision: 0, changeSets: [createList("list \(round)")], clientID: "phone", requestID: "r\(round)", limit: 1)
                async let first = a.handle(request)
                async let second = b.handle(request)
                let (one, two) = try await (first, second)
                #expect(one.changeSets.last == two.changeSets.last)
                #expect(one.maxRevision == two.maxRevision)
            }
            let all = try await a.handle(SyncRequest(maxRevision: 0, changeSets: []))
            let names = all.changeSets.flatMap { $0.entities.flatMap(\.records) }.map(\.values)
            #expect(names.count == rounds, "a request applied twice")
            #expect(Set(names.map { "\($0)" }).count == rounds)
        }
    }

    @Test func aServerThatLocks_refusesADataSetWhoseWritesRunInParallel() async throws {
        try await PostgresTestDatabase.with { database in
            _ = try await database.server(schema, order: .parallel)
            await #expect(throws: ServerError.self) { _ = try await database.server(schema) }
            // One that writes in parallel too is welcome.
            let again = try await database.server(schema, order: .parallel)
            #expect(try await again.handle(SyncRequest(maxRevision: 0, changeSets: [createList("x")])).maxRevision == 1)
        }
    }

    /// Runs `body` while another session holds the row `id` of `table` (a list's by
    /// default), then releases it and runs what `body` returned (awaiting what needed the row).
    static func holdingList<T>(
        _ id: Int64, in table: String = "lists", of database: PostgresTestDatabase,
        _ body: (PostgresConnection, Logger) async throws -> () async throws -> T
    ) async throws -> T {
        let admin = PostgresConnector(database.url, applicationName: "fm_admin")
        let held: () async throws -> T
        do {
            held = try await holding(id, in: table, of: database, on: admin, body)
        } catch {
            await admin.shutdown()
            throw error
        }
        await admin.shutdown()
        return try await held()
    }

    private static func holding<T>(
        _ id: Int64, in table: String, of database: PostgresTestDatabase, on admin: PostgresConnector,
        _ body: (PostgresConnection, Logger) async throws -> () async throws -> T
    ) async throws -> () async throws -> T {
        try await admin.client.withConnection { connection in
            let log = admin.logger
            try await connection.query("BEGIN", logger: log)
            try await connection.query(
                PostgresQuery(unsafeSQL: "SELECT 1 FROM \"\(database.url.schema)\".\"\(table)\" WHERE \"id\" = $1 FOR UPDATE", binds: PostgresServerStorage.binds(id)),
                logger: log)
            let finish = try await body(connection, log)
            try await connection.query("ROLLBACK", logger: log)
            return finish
        }
    }

    /// Returns once no backend of the test's servers waits for a lock (a terminated one has gone).
    static func untilNoBackendWaits(_ database: PostgresTestDatabase) async throws {
        let admin = PostgresConnector(database.url, applicationName: "fm_admin")
        do {
            try await admin.client.withConnection { connection in
                let query = PostgresQuery(
                    unsafeSQL: "SELECT count(*) FROM pg_stat_activity WHERE application_name = $1 AND wait_event_type = 'Lock'",
                    binds: PostgresServerStorage.binds(database.url.schema))
                try await PostgresRevisionTests.poll("no backend of the test waiting for a lock") {
                    try await connection.query(query, logger: admin.logger).collect().first?.decode(Int64.self) == 0
                }
            }
        } catch {
            await admin.shutdown()
            throw error
        }
        await admin.shutdown()
    }
}
