import FieldMerge
import FieldMergeSQLiteDriver
import Foundation
import FieldMergeProtocol
@testable import FieldMergeServer
import FieldMergeServerSQLite
@testable import FieldMergeServerPostgres
import Testing

/// Writes that queue behind each other are answered in one transaction (group commit,
/// Specs/http.md §8 "Writes in groups"), each exactly as if it had run alone after the ones
/// before it; a request that fails fails alone.
enum WriteGroupScenario {
    /// Ten writes queued while the server's turn is held: eight devices create a list each,
    /// a ninth sends two change sets, and the first device's request arrives a second time (a
    /// retry). They run as one group.
    static func queuedWritesAreAnsweredAsOneAfterAnother(_ server: RevisionServer) async throws {
        let requests = (0..<8).map { SyncRequest(maxRevision: 0, changeSets: [createList("list \($0)")], clientID: "device \($0)", requestID: "1") }
            + [
                SyncRequest(maxRevision: 0, changeSets: [createList("a"), createList("b")], clientID: "device 8", requestID: "1"),
                SyncRequest(maxRevision: 0, changeSets: [createList("list 0")], clientID: "device 0", requestID: "1"),
            ]
        let responses = try await queued(requests, on: server)
        #expect(await server.writeGroupsCommitted == 1)

        // Ten change sets, ten revisions, each once; the retry got the first answer again.
        var answered: [Int64] = []
        for (request, response) in zip(requests, responses).prefix(9) {
            let answers = response.changeSets.suffix(request.changeSets.count)
            #expect(answers.allSatisfy { $0.conflict != true })
            answered += revisions(Array(answers))
        }
        #expect(answered.sorted() == Array(1...10))
        let retryAnswers = Array(responses[9].changeSets.suffix(1))
        #expect(retryAnswers == Array(responses[0].changeSets.suffix(1)))

        // Each answer's catch-up holds exactly the lists that committed before it in the
        // group, and its revision is its own last one.
        for (request, response) in zip(requests, responses).prefix(9) {
            let own = revisions(Array(response.changeSets.suffix(request.changeSets.count)))
            let caughtUp = revisions(Array(response.changeSets.dropLast(request.changeSets.count)))
            #expect(response.maxRevision == own.max())
            #expect(caughtUp.sorted() == Array(1..<(own.min() ?? 1)), "request of \(request.clientID ?? "")")
        }

        // The data set: ten lists with ten ids, at revision 10.
        let all = try await server.handle(SyncRequest(maxRevision: 0, changeSets: []))
        #expect(all.maxRevision == 10)
        let lists = all.changeSets.flatMap { $0.entities.filter { $0.entity == "lists" }.flatMap(\.records) }
        #expect(Set(lists.map(\.id)).count == 10)
        #expect(lists.compactMap { if case .text(let name) = $0.values[0] { name } else { nil } }.sorted()
            == ((0..<8).map { "list \($0)" } + ["a", "b"]).sorted())
    }

    /// A group with one request the server refuses (a device ahead of the data set): that
    /// request gets its error, and every other one its answer, once.
    static func aFailingRequestFailsAlone(_ server: RevisionServer) async throws {
        var requests = (0..<5).map { SyncRequest(maxRevision: 0, changeSets: [createList("list \($0)")], clientID: "device \($0)", requestID: "1") }
        requests.insert(SyncRequest(maxRevision: 1_000, changeSets: [createList("ahead")], clientID: "ahead", requestID: "1"), at: 2)
        let results = await queuedResults(requests, on: server)
        #expect(await server.writeGroupsCommitted == 0)
        for (index, result) in results.enumerated() {
            switch result {
            case .success(let response):
                #expect(index != 2, "the device ahead was answered")
                #expect(revisions(Array(response.changeSets.suffix(1))).count == 1)
            case .failure(let error):
                #expect(index == 2, "request \(index) failed: \(error)")
                #expect(error.code == .revisionAhead)
            }
        }
        let all = try await server.handle(SyncRequest(maxRevision: 0, changeSets: []))
        #expect(all.maxRevision == 5)
        let names = all.changeSets.flatMap { $0.entities.flatMap(\.records) }.compactMap { if case .text(let name) = $0.values[0] { name } else { nil } }
        #expect(names.sorted() == (0..<5).map { "list \($0)" })
        #expect(await server.maxRevision == 5)
    }

    /// Sends `requests` while the server's turn is held, in this order, and releases it once
    /// all of them wait: they form one group.
    static func queuedResults(_ requests: [SyncRequest], on server: RevisionServer) async -> [Result<SyncResponse, ServerError>] {
        await server.holdTurn()
        var tasks: [Task<Result<SyncResponse, ServerError>, Never>] = []
        for (index, request) in requests.enumerated() {
            tasks.append(Task {
                do throws(ServerError) { return .success(try await server.handle(request)) } catch { return .failure(error) }
            })
            // Queued in order: the next is sent once this one waits.
            while await server.queuedWriteCount < index + 1 { await Task.yield() }
        }
        await server.releaseTurn()
        var results: [Result<SyncResponse, ServerError>] = []
        for task in tasks { results.append(await task.value) }
        return results
    }

    static func queued(_ requests: [SyncRequest], on server: RevisionServer) async throws -> [SyncResponse] {
        try await queuedResults(requests, on: server).map { try $0.get() }
    }
}

/// The scenarios on SQLite, through a storage that asks for groups (SQLite itself does not).
struct WriteGroupSQLiteTests {
    static func server() async throws -> RevisionServer {
        try await RevisionServer(storage: CountingStorage(try SQLiteServerStorage(), groupsWrites: true), schema: try postgresSchema())
    }

    @Test func queuedWritesAreAnsweredAsOneAfterAnother() async throws {
        try await WriteGroupScenario.queuedWritesAreAnsweredAsOneAfterAnother(try await Self.server())
    }

    @Test func aFailingRequestFailsAlone() async throws {
        try await WriteGroupScenario.aFailingRequestFailsAlone(try await Self.server())
    }
}

/// A SQLite file opened durable across power loss (every commit waits for the disk's flush)
/// asks for groups itself, and pays one flush per group; the default does not.
struct WriteGroupDurableSQLiteTests {
    static func file() -> String { NSTemporaryDirectory() + "fm-durable-groups-\(UUID().uuidString).sqlite" }

    /// Runs `body` with a server on a new durable file, removed afterwards.
    static func withDurableServer(_ body: (RevisionServer) async throws -> Void) async throws {
        let path = file()
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) } }
        var options = Database.Options()
        options.durableAcrossPowerLoss = true
        try await body(try RevisionServer(.file(path: path), schema: try postgresSchema(), database: options))
    }

    @Test func queuedWritesAreAnsweredAsOneAfterAnother() async throws {
        try await Self.withDurableServer(WriteGroupScenario.queuedWritesAreAnsweredAsOneAfterAnother)
    }

    @Test func aFailingRequestFailsAlone() async throws {
        try await Self.withDurableServer(WriteGroupScenario.aFailingRequestFailsAlone)
    }

    @Test func aFileThatIsNotDurableDoesNotGroup() throws {
        let path = Self.file()
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) } }
        #expect(try SQLiteServerStorage(.file(path: path)).groupsWrites == false)
        var options = Database.Options()
        options.durableAcrossPowerLoss = true
        #expect(try SQLiteServerStorage(.file(path: path), options: options).groupsWrites == true)
        options.readOnly = true
        #expect(try SQLiteServerStorage(.file(path: path), options: options).groupsWrites == false)
    }
}

@Suite(.enabled(if: PostgresTestEnvironment.shouldRun, "FIELDMERGE_POSTGRES_URL is not set: PostgreSQL suite skipped (Scripts/with-postgres swift test runs it)"))
struct WriteGroupPostgresTests {
    @Test func queuedWritesAreAnsweredAsOneAfterAnother() async throws {
        try await PostgresTestDatabase.with { database in
            try await WriteGroupScenario.queuedWritesAreAnsweredAsOneAfterAnother(try await database.server(try postgresSchema()))
        }
    }

    @Test func aFailingRequestFailsAlone() async throws {
        try await PostgresTestDatabase.with { database in
            try await WriteGroupScenario.aFailingRequestFailsAlone(try await database.server(try postgresSchema()))
        }
    }

    /// Two servers on one data set (two processes), 12 devices each writing at once, every
    /// request sent a second time to the other server (a retry whose answer was lost), while
    /// a reader pages through the log on both: every acknowledged create is there once with
    /// the id and revision its answer gave, each retry gets the same answer, and the reader
    /// receives every revision once, in order, none skipped.
    @Test func twoServers_concurrentWritesAndRetries_loseNothing_andReadersSkipNothing() async throws {
        try await PostgresTestDatabase.with { database in
            let servers = [try await database.server(try postgresSchema()), try await database.server(try postgresSchema())]
            let devices = 24, requests = 6
            let writersDone = Flag()
            let writers = Task { () async throws -> [(name: String, id: Int64, revision: Int64)] in
                defer { Task { await writersDone.set() } }
                return try await withThrowingTaskGroup(of: [(name: String, id: Int64, revision: Int64)].self) { group in
                    for device in 0..<devices {
                        group.addTask {
                            var created: [(name: String, id: Int64, revision: Int64)] = []
                            var seen: Int64 = 0
                            for number in 0..<requests {
                                let name = "device \(device) list \(number)"
                                let request = SyncRequest(
                                    maxRevision: seen, changeSets: [createList(name)], clientID: "device \(device)", requestID: "\(number)")
                                let first = try await servers[device % 2].handle(request)
                                let retry = try await servers[(device + 1) % 2].handle(request)
                                #expect(retry.changeSets.last == first.changeSets.last, "the retry of \(name)")
                                let answer = try #require(first.changeSets.last?.entities.first?.records.first)
                                #expect(first.changeSets.last?.conflict != true)
                                created.append((name, answer.id, try #require(answer.revision)))
                                seen = first.maxRevision
                            }
                            return created
                        }
                    }
                    var all: [(name: String, id: Int64, revision: Int64)] = []
                    for try await created in group { all += created }
                    return all
                }
            }
            // The reader: pages of at most 5 records, alternating servers, until the writers
            // are done and it has caught up.
            var read: [Int64: (id: Int64, name: String)] = [:]
            var cursor: Int64 = 0
            var turn = 0
            var done = false
            while true {
                let page = try await servers[turn % 2].handle(SyncRequest(maxRevision: cursor, changeSets: [], limit: 5))
                turn += 1
                for record in page.changeSets.flatMap({ $0.entities.flatMap(\.records) }) {
                    let revision = try #require(record.revision)
                    #expect(revision > cursor && revision <= page.maxRevision, "revision \(revision) in a page after \(cursor)")
                    #expect(read[revision] == nil, "revision \(revision) read twice")
                    if case .text(let name) = record.values[0] { read[revision] = (record.id, name) }
                }
                #expect(page.maxRevision >= cursor)
                cursor = page.maxRevision
                if done && page.hasMore != true { break }
                if !done, await writersDone.isSet { done = true }
                if !done { try await Task.sleep(for: .milliseconds(2)) }
            }
            let created = try await writers.value
            #expect(created.count == devices * requests)
            #expect(Set(created.map(\.revision)) == Set(1...Int64(devices * requests)), "each create its own revision, no gap")
            #expect(cursor == Int64(devices * requests))
            for create in created {
                #expect(read[create.revision]?.id == create.id && read[create.revision]?.name == create.name, "\(create.name) as answered")
            }
            let groups = await servers[0].writeGroupsCommitted + servers[1].writeGroupsCommitted
            print("two servers: \(created.count) creates, \(groups) group transactions")
        }
    }

    /// Set once the writers are done.
    actor Flag {
        var isSet = false
        func set() { isSet = true }
    }
}
