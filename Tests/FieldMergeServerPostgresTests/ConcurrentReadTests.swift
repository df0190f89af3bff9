import FieldMerge
import FieldMergeProtocol
@testable import FieldMergeServer
@testable import FieldMergeServerPostgres
import PostgresNIO
import Synchronization
import Testing

/// On PostgreSQL a request that only reads runs beside the server's write in progress and
/// beside other reads, each transaction on a connection of its own (Specs/http.md §8).
@Suite(.enabled(if: PostgresTestEnvironment.shouldRun, "FIELDMERGE_POSTGRES_URL is not set: PostgreSQL suite skipped (Scripts/with-postgres swift test runs it)"))
struct ConcurrentReadTests {
    let schema: Schema
    init() throws { schema = try postgresSchema() }

    @Test func aCatchUp_isAnswered_whileAWriteOfTheSameServerWaitsForTheDataSetsLock() async throws {
        try await PostgresTestDatabase.with { database in
            let server = try await database.server(schema)
            _ = try await server.handle(SyncRequest(maxRevision: 0, changeSets: [createList("before")]))
            let write = SyncRequest(maxRevision: 1, changeSets: [createList("after")], clientID: "phone", requestID: "w")
            let admin = PostgresConnector(database.url, applicationName: "fm_admin")
            let finished = Finished()
            let (read, readWhileLocked, written) = try await admin.client.withConnection { connection in
                let log = admin.logger
                try await connection.query("BEGIN", logger: log)
                // Another session holds the state row: the server's write waits inside its transaction.
                try await connection.query(PostgresQuery(unsafeSQL: "SELECT 1 FROM \"\(database.url.schema)\".\"__fm_server\" FOR UPDATE"), logger: log)
                async let waiting = server.handle(write)
                try await PostgresRevisionTests.untilWaitingForALock(database.url.schema, on: connection, logger: log)
                async let reading: SyncResponse = {
                    defer { finished.mark() }
                    return try await server.handle(SyncRequest(maxRevision: 0, changeSets: []))
                }()
                // Generous: the read takes milliseconds; before, it waited for the write, forever.
                for _ in 0..<6_000 where !finished.isMarked { try await Task.sleep(for: .milliseconds(10)) }
                let readWhileLocked = finished.isMarked
                try await connection.query("ROLLBACK", logger: log)
                return (try await reading, readWhileLocked, try await waiting)
            }
            await admin.shutdown()
            #expect(readWhileLocked, "the catch-up waited for the write in progress")
            // The read saw the data set as committed before the write.
            #expect(read.maxRevision == 1)
            #expect(read.changeSets.flatMap { $0.entities.flatMap(\.records) }.map(\.values) == [[.text("before")]])
            #expect(written.maxRevision == 2)
            #expect(written.changeSets.last?.conflict != true)
            let all = try await server.handle(SyncRequest(maxRevision: 0, changeSets: []))
            #expect(all.changeSets.flatMap { $0.entities.flatMap(\.records) }.map(\.values) == [[.text("before")], [.text("after")]])
            // The write's stored reply is exact: its retry changes nothing.
            #expect(try await server.handle(write) == written)
            #expect(try await server.handle(SyncRequest(maxRevision: 0, changeSets: [])).maxRevision == 2)
        }
    }

    @Test func readersCatchingUpBesideWriters_eachSeeEveryRevisionOnce_inOrder() async throws {
        try await PostgresTestDatabase.with { database in
            let server = try await database.server(schema)
            let (writers, writesEach, readers) = (3, 12, 3)
            let total = Int64(writers * writesEach)
            try await withThrowingTaskGroup(of: [Int64].self) { group in
                for writer in 0..<writers {
                    group.addTask {
                        var maxRevision: Int64 = 0
                        for index in 0..<writesEach {
                            let response = try await server.handle(SyncRequest(
                                maxRevision: maxRevision, changeSets: [createList("w\(writer)-\(index)")], clientID: "writer\(writer)",
                                requestID: "r\(index)"))
                            #expect(response.changeSets.last?.conflict != true)
                            maxRevision = response.maxRevision
                        }
                        return []
                    }
                }
                for _ in 0..<readers {
                    group.addTask {
                        // Catches up page by page (small pages) until it has every revision.
                        var (maxRevision, seen): (Int64, [Int64]) = (0, [])
                        while maxRevision < total {
                            let page = try await server.handle(SyncRequest(maxRevision: maxRevision, changeSets: [], limit: 2))
                            let got = revisions(page.changeSets)
                            #expect(got.allSatisfy { $0 > maxRevision && $0 <= page.maxRevision })
                            #expect(page.maxRevision >= maxRevision)
                            seen += got
                            maxRevision = page.maxRevision
                            if got.isEmpty { try await Task.sleep(for: .milliseconds(5)) }
                        }
                        return seen
                    }
                }
                var readersDone = 0
                for try await seen in group where !seen.isEmpty {
                    readersDone += 1
                    // Every revision once, in order: none skipped, none twice.
                    #expect(seen == Array(1...total))
                }
                #expect(readersDone == readers)
            }
            let all = try await server.handle(SyncRequest(maxRevision: 0, changeSets: []))
            #expect(all.maxRevision == total)
            #expect(Set(all.changeSets.flatMap { $0.entities.flatMap(\.records) }.map(\.values)).count == Int(total))
        }
    }
}

/// Whether a task has finished, read from another.
private final class Finished: Sendable {
    private let flag = Atomic<Bool>(false)
    func mark() { flag.store(true, ordering: .releasing) }
    var isMarked: Bool { flag.load(ordering: .acquiring) }
}
