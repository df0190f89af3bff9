import FieldMerge
import FieldMergeProtocol
@testable import FieldMergeServer
import FieldMergeServerSQLite
@testable import FieldMergeServerPostgres
import PostgresNIO
import Testing

@Suite(.enabled(if: PostgresTestEnvironment.shouldRun, "FIELDMERGE_POSTGRES_URL is not set: PostgreSQL suite skipped (Scripts/with-postgres swift test runs it)"))
struct PostgresRevisionTests {
    let schema: Schema
    init() throws { schema = try postgresSchema() }

    @Test func retriedRequest_getsTheStoredReply_fromEitherServer() async throws {
        try await PostgresTestDatabase.with { database in
            let a = try await database.server(schema), b = try await database.server(schema)
            let request = SyncRequest(maxRevision: 0, changeSets: [createList("Home")], clientID: "phone", requestID: "r1")
            let first = try await a.handle(request)
            #expect(revisions(first.changeSets) == [1])
            #expect(try await a.handle(request) == first)
            #expect(try await b.handle(request) == first)
            // Nothing was applied twice.
            let state = try await b.handle(SyncRequest(maxRevision: 0, changeSets: []))
            #expect(state.maxRevision == 1)
            #expect(revisions(state.changeSets) == [1])
        }
    }

    @Test func staleUpdate_isAConflictAnsweredWithTheTruth_andRolledBack() async throws {
        try await PostgresTestDatabase.with { database in
            let server = try await database.server(schema)
            _ = try await server.handle(SyncRequest(maxRevision: 0, changeSets: [createList("first")]))
            let current = try await server.handle(SyncRequest(maxRevision: 1, changeSets: [renameList(1, to: "second", at: 1)]))
            #expect(current.changeSets.last?.conflict != true)
            #expect(current.maxRevision == 2)
            // Another device still holds revision 1: its rename, and a create in the same change set, are refused.
            var stale = renameList(1, to: "stale", at: 1)
            stale.entities += createList("new").entities
            let answer = try await server.handle(SyncRequest(maxRevision: 1, changeSets: [stale]))
            let conflict = try #require(answer.changeSets.last)
            #expect(conflict.conflict == true)
            let truth = try #require(conflict.entities.first { $0.entity == "lists" }?.records.first { $0.id == 1 })
            #expect(truth.values == [.text("second")])
            #expect(truth.revision == 2)
            let after = try await server.handle(SyncRequest(maxRevision: 0, changeSets: []))
            #expect(after.maxRevision == 2)
            #expect(after.changeSets.flatMap { $0.entities.flatMap(\.records) }.map(\.values) == [[.text("second")]])
        }
    }

    /// A change set renaming list `id`, which the sender holds at `revision`.
    func renameList(_ id: Int64, to name: String, at revision: Int64) -> ChangeSet {
        let record = WireRecord(id: id, present: FieldMask.all(count: 1), values: [.text(name)], revision: revision)
        return ChangeSet(entities: [EntityChanges(entity: "lists", update: [id], records: [record])])
    }

    @Test func catchUpInPages_endsOnRevisionBoundariesWithEveryRecordOnce() async throws {
        try await PostgresTestDatabase.with { database in
            let server = try await database.server(schema)
            for n in 1...25 {
                let response = try await server.handle(SyncRequest(maxRevision: Int64(n - 1), changeSets: [createList("list \(n)")]))
                #expect(response.maxRevision == Int64(n))
            }
            var seen: [Int64] = [], revision: Int64 = 0, pages = 0
            while true {
                let page = try await server.handle(SyncRequest(maxRevision: revision, changeSets: [], limit: 4))
                pages += 1
                seen += revisions(page.changeSets)
                #expect(page.maxRevision > revision)
                revision = page.maxRevision
                if !page.hasMore { break }
            }
            #expect(seen == Array(1...25))
            #expect(revision == 25)
            #expect(pages == 7)
        }
    }

    @Test func twoServersOnOneDataSet_interleaveWritesWithoutGapsOrDuplicates() async throws {
        try await PostgresTestDatabase.with { database in
            let servers = [try await database.server(schema), try await database.server(schema, replica: ReplicaID(0x5E_5F))]
            let perServer = 12
            let assigned = try await withThrowingTaskGroup(of: [Int64].self) { group in
                for (index, server) in servers.enumerated() {
                    group.addTask {
                        var mine: [Int64] = []
                        for n in 0..<perServer {
                            let request = SyncRequest(maxRevision: 0, changeSets: [createList("server \(index) #\(n)")], limit: 1)
                            let response = try await server.handle(request)
                            mine += revisions(Array(response.changeSets.suffix(1)))
                        }
                        return mine
                    }
                }
                var all: [Int64] = []
                for try await mine in group {
                    #expect(mine.count == perServer)
                    #expect(mine == mine.sorted())
                    all += mine
                }
                return all
            }
            let total = Int64(2 * perServer)
            #expect(assigned.sorted() == Array(1...total))
            let views = try await servers.asyncMap { try await $0.handle(SyncRequest(maxRevision: 0, changeSets: [])) }
            #expect(views[0] == views[1])
            #expect(views[0].maxRevision == total)
            #expect(revisions(views[0].changeSets).sorted() == Array(1...total))
            let ids = views[0].changeSets.flatMap { $0.entities.flatMap { $0.records.map(\.id) } }
            #expect(ids.sorted() == Array(1...total))
        }
    }

    @Test(arguments: PostgresWriteOrder.allCases)
    func serversOpeningANewDataSetTogether_createItOnce(order: PostgresWriteOrder) async throws {
        try await PostgresTestDatabase.with { database in
            let (url, schema) = (database.url, schema)
            let opened = try await withThrowingTaskGroup(of: Int64.self) { group in
                for index in 0..<3 {
                    group.addTask {
                        let connector = PostgresConnector(url)
                        do {
                            let server = try await RevisionServer(storage: try PostgresServerStorage(connector, order: order), schema: schema)
                            let response = try await server.handle(SyncRequest(maxRevision: 0, changeSets: [createList("from \(index)")]))
                            await connector.shutdown()
                            // The revision its create got (the answer's own may stop below it
                            // while another's is in flight, with writes in parallel).
                            return revisions(Array(response.changeSets.suffix(1))).first ?? -1
                        } catch {
                            await connector.shutdown()
                            throw error
                        }
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(opened.sorted() == [1, 2, 3])
        }
    }

    /// A text holding U+0000 (which PostgreSQL's text cannot keep) refuses its record alone,
    /// before the storage sees it, as on SQLite; the record beside it is taken.
    @Test func textHoldingNUL_isRefusedAlone_andTheRestIsTaken() async throws {
        try await PostgresTestDatabase.with { database in
            let server = try await database.server(schema)
            var both = createList("a\u{0}b")
            both.entities[0].create.append(-2)
            both.entities[0].records.append(WireRecord(id: -2, present: FieldMask.all(count: 1), values: [.text("fine")]))
            let answer = try await server.handle(SyncRequest(maxRevision: 0, changeSets: [both]))
            #expect(answer.changeSets.last?.refused.map(\.code) == ["unstorable"])
            #expect(answer.changeSets.last?.refused.map(\.id) == [-1])
            #expect(answer.changeSets.last?.entities.first?.records.map(\.oldID) == [-2])
            #expect(answer.maxRevision == 1)
            #expect(revisions(answer.changeSets) == [1])
        }
    }

    @Test func unknownEntity_isABadRequest_asOnSQLite() async throws {
        try await PostgresTestDatabase.with { database in
            let request = SyncRequest(maxRevision: 0, changeSets: [
                ChangeSet(entities: [EntityChanges(entity: "nowhere", create: [-1], records: [
                    WireRecord(id: -1, present: FieldMask.all(count: 1), values: [.text("x")]),
                ])]),
            ])
            let onSQLite = await #expect(throws: ServerError.self) {
                _ = try await RevisionServer(.memory, schema: schema).handle(request)
            }
            let server = try await database.server(schema)
            let onPostgres = await #expect(throws: ServerError.self) { _ = try await server.handle(request) }
            #expect(onSQLite?.code == .badRequest)
            #expect(onPostgres?.code == onSQLite?.code)
            #expect(onPostgres?.message == onSQLite?.message)
        }
    }

    @Test func connectionLostMidRequest_isARetryableStorageError_andTheRetryApplies() async throws {
        try await PostgresTestDatabase.with { database in
            let server = try await database.server(schema)
            _ = try await server.handle(SyncRequest(maxRevision: 0, changeSets: [createList("before")]))
            let request = SyncRequest(maxRevision: 1, changeSets: [createList("after")], clientID: "phone", requestID: "r2")
            // Another session holds the state row, so the request waits inside its transaction;
            // then its connection is ended (as a restart of PostgreSQL would).
            let admin = PostgresConnector(database.url, applicationName: "fm_admin")
            let outcome = try await admin.client.withConnection { connection in
                let log = admin.logger
                try await connection.query("BEGIN", logger: log)
                try await connection.query(PostgresQuery(unsafeSQL: "SELECT 1 FROM \"\(database.url.schema)\".\"__fm_server\" FOR UPDATE"), logger: log)
                async let waiting: Result<SyncResponse, ServerError> = {
                    do throws(ServerError) { return .success(try await server.handle(request)) } catch { return .failure(error) }
                }()
                try await Self.untilWaitingForALock(database.url.schema, on: connection, logger: log)
                try await connection.query(PostgresQuery(
                    unsafeSQL: "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = $1",
                    binds: PostgresServerStorage.binds(database.url.schema)), logger: log)
                let outcome = await waiting
                try await connection.query("ROLLBACK", logger: log)
                return outcome
            }
            await admin.shutdown()
            guard case .failure(let error) = outcome else {
                Issue.record("the request succeeded on a connection that was ended: \(outcome)")
                return
            }
            #expect(error.code == .storage && error.isRetryable, "\(error)")
            #expect(error.cause != nil)
            let retried = try await server.handle(request)
            #expect(retried.maxRevision == 2)
            let all = try await server.handle(SyncRequest(maxRevision: 0, changeSets: []))
            #expect(all.changeSets.flatMap { $0.entities.flatMap(\.records) }.map(\.values) == [[.text("before")], [.text("after")]])
        }
    }

    @Test func aDeadlock_isRunAgainInsideTheServer_andTheRequestApplies() async throws {
        try await PostgresTestDatabase.with { database in
            let server = try await database.server(schema)
            _ = try await server.handle(SyncRequest(maxRevision: 0, changeSets: [createList("before")]))
            let request = SyncRequest(maxRevision: 1, changeSets: [createList("after")], clientID: "phone", requestID: "r2")
            let (ids, state) = ("\"\(database.url.schema)\".\"__fm_ids\"", "\"\(database.url.schema)\".\"__fm_server\"")
            // Another session holds the id counter of lists; the request takes the state row and
            // waits for the counter; then the session asks for the state row: a deadlock, which
            // PostgreSQL breaks by ending the transaction that waited first, the server's.
            let admin = PostgresConnector(database.url, applicationName: "fm_admin")
            let (outcome, sessionGotTheLock) = try await admin.client.withConnection { connection in
                let log = admin.logger
                try await connection.query("BEGIN", logger: log)
                try await connection.query(PostgresQuery(unsafeSQL: "UPDATE \(ids) SET \"next\" = \"next\" WHERE \"entity\" = 'lists'"), logger: log)
                async let waiting: Result<SyncResponse, ServerError> = {
                    do throws(ServerError) { return .success(try await server.handle(request)) } catch { return .failure(error) }
                }()
                try await Self.untilWaitingForALock(database.url.schema, on: connection, logger: log)
                var gotTheLock = true
                do {
                    try await connection.query(PostgresQuery(unsafeSQL: "SELECT 1 FROM \(state) FOR UPDATE"), logger: log)
                } catch {
                    gotTheLock = false  // this session was the victim after all: nothing proven
                }
                try await connection.query("ROLLBACK", logger: log)
                return (await waiting, gotTheLock)
            }
            await admin.shutdown()
            #expect(sessionGotTheLock, "PostgreSQL ended the other session, not the server's transaction")
            guard case .success(let response) = outcome else {
                Issue.record("the request failed instead of running again: \(outcome)")
                return
            }
            #expect(response.maxRevision == 2)
            let all = try await server.handle(SyncRequest(maxRevision: 0, changeSets: []))
            #expect(all.changeSets.flatMap { $0.entities.flatMap(\.records) }.map(\.values) == [[.text("before")], [.text("after")]])
            // Its retry is answered from the stored reply: the run that went through kept it.
            #expect(try await server.handle(request).maxRevision == 2)
            #expect(try await database.count("SELECT count(*) FROM \"\(database.url.schema)\".\"lists\"") == 2)
        }
    }

    @Test func aStatementPastTheTimeout_isCancelled_asARetryableErrorThatChangedNothing() async throws {
        try await PostgresTestDatabase.with { database in
            let server = try await database.server(schema, statementTimeout: .milliseconds(300))
            _ = try await server.handle(SyncRequest(maxRevision: 0, changeSets: [createList("before")]))
            let admin = PostgresConnector(database.url, applicationName: "fm_admin")
            let outcome = try await admin.client.withConnection { connection in
                let log = admin.logger
                try await connection.query("BEGIN", logger: log)
                try await connection.query(PostgresQuery(unsafeSQL: "SELECT 1 FROM \"\(database.url.schema)\".\"__fm_server\" FOR UPDATE"), logger: log)
                // Held for longer than the timeout: the request's wait for the lock is cancelled.
                let result: Result<SyncResponse, ServerError>
                do throws(ServerError) {
                    result = .success(try await server.handle(SyncRequest(maxRevision: 1, changeSets: [createList("late")])))
                } catch {
                    result = .failure(error)
                }
                try await connection.query("ROLLBACK", logger: log)
                return result
            }
            await admin.shutdown()
            guard case .failure(let error) = outcome else {
                Issue.record("the request waited past the statement timeout: \(outcome)")
                return
            }
            #expect(error.code == .storage && error.isRetryable, "\(error)")
            #expect(error.message.contains("57014"), "\(error.message)")
            #expect(try await database.count("SELECT count(*) FROM \"\(database.url.schema)\".\"lists\"") == 1)
            #expect(try await server.handle(SyncRequest(maxRevision: 1, changeSets: [createList("late")])).maxRevision == 2)
        }
    }

    @Test func anotherSchema_isRefusedAsASchemaMismatch() async throws {
        try await PostgresTestDatabase.with { database in
            _ = try await database.server(schema)
            let other = try Schema([Entity("lists", fields: [Field("name", .text), Field("color", .integer)])])
            let error = await #expect(throws: ServerError.self) { _ = try await database.server(other) }
            #expect(error?.code == .schemaMismatch)
            #expect(error?.message.contains("color") == true)
        }
    }
}

extension PostgresRevisionTests {
    /// Returns once a connection named `application` (a test database's servers are named by
    /// its schema) waits for a lock, asking on `connection`.
    static func untilWaitingForALock(_ application: String, on connection: PostgresConnection, logger: Logger, count: Int64 = 1) async throws {
        try await poll("\(count) backends of the test waiting for a lock") {
            try await ParallelAloneWriteTests.waiting(application, on: connection, logger: logger) >= count
        }
    }

    /// Returns once `condition` holds, looking every 10 ms; throws after 60 s, so that a wait
    /// for something that never comes fails its test instead of stalling the run.
    static func poll(_ what: String, until condition: () async throws -> Bool) async throws {
        let started = ContinuousClock.now
        while try await !condition() {
            guard ContinuousClock.now - started < .seconds(60) else { throw PollTimeout(description: "waited 60 s for \(what)") }
            try await Task.sleep(for: .milliseconds(10))
        }
    }
}

/// A wait in a test that did not end (``PostgresRevisionTests/poll(_:until:)``).
struct PollTimeout: Error, CustomStringConvertible {
    var description: String
}

extension Array {
    /// The results of `transform` on each element, one after another.
    func asyncMap<T>(_ transform: (Element) async throws -> T) async rethrows -> [T] {
        var results: [T] = []
        for element in self { results.append(try await transform(element)) }
        return results
    }
}

