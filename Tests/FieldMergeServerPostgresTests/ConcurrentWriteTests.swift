import FieldMerge
import FieldMergeProtocol
@testable import FieldMergeServer
@testable import FieldMergeServerPostgres
import Synchronization
import Testing

/// Several servers on one PostgreSQL data set, each with a pool of its own (as separate
/// processes have), write overlapping records at once while readers catch up without pause
/// (Specs/http.md §8, "How writes are ordered"). Whatever orders the writes must keep four
/// promises, checked here: every acknowledged change is in the data set once; in strict mode
/// the acknowledged updates of one record form one chain, each based on the one before; a
/// reader that follows the revisions page by page ends with exactly the data set (no entry
/// skipped, however the commits interleaved); and a retry sent to the other server gets the
/// first answers to its change sets again, with the same revision to go on from (its
/// catch-up part is read again, up to where the first ended; a conflict, which changed
/// nothing and kept no reply, is answered anew).
@Suite(.enabled(if: PostgresTestEnvironment.shouldRun, "FIELDMERGE_POSTGRES_URL is not set: PostgreSQL suite skipped (Scripts/with-postgres swift test runs it)"))
struct ConcurrentWriteTests {
    let schema: Schema
    init() throws { schema = try postgresSchema() }

    /// What a writer was told: a create or an update of one list, acknowledged at `revision`.
    struct Acknowledged: Sendable {
        var id: Int64
        var name: String
        var revision: Int64
        /// The revision the update was based on (nil for a create).
        var base: Int64?
    }

    @Test(arguments: PostgresWriteOrder.allCases)
    func overlappingWritersOnTwoServers_withReadersCatchingUp_loseNothingSkipNothingAndReplayExactly(order: PostgresWriteOrder) async throws {
        try await PostgresTestDatabase.with { database in
            let servers = [
                try await database.server(schema, replica: ReplicaID(0x5E_5E), order: order),
                try await database.server(schema, replica: ReplicaID(0x5E_5F), order: order),
            ]
            let hot = 4
            let seeded = try await servers[0].handle(SyncRequest(maxRevision: 0, changeSets: [RoundTripCountTests.lists(hot)]))
            let seedRevision = seeded.maxRevision
            let hotIDs = Array(revisionsAndIDs(seeded.changeSets).map(\.id).sorted())
            #expect(hotIDs.count == hot)
            let (writers, requestsEach) = (4, 14)
            let writing = Countdown(writers)
            let outcome = try await withThrowingTaskGroup(of: Part.self) { group in
                for writer in 0..<writers {
                    group.addTask {
                        defer { writing.countDown() }
                        return .writer(try await Self.write(
                            as: writer, requests: requestsEach, on: servers[writer % 2], retryingOn: servers[(writer + 1) % 2],
                            hot: hotIDs, seedRevision: seedRevision))
                    }
                }
                for reader in 0..<2 {
                    group.addTask {
                        .reader(try await Self.follow(servers[reader], pageLimit: 3, untilDone: { writing.isOver }))
                    }
                }
                var (acknowledged, replicas) = ([Acknowledged](), [[Int64: (Int64, ContiguousArray<Value>)]]())
                for try await part in group {
                    switch part {
                    case .writer(let acks): acknowledged += acks
                    case .reader(let replica): replicas.append(replica)
                    }
                }
                return (acknowledged, replicas)
            }
            let (acknowledged, replicas) = outcome
            let everything = try await servers[1].handle(SyncRequest(maxRevision: 0, changeSets: []))
            #expect(!everything.hasMore)
            var truth: [Int64: (Int64, ContiguousArray<Value>)] = [:]
            for record in everything.changeSets.flatMap({ $0.entities.flatMap(\.records) }) {
                #expect(truth[record.id] == nil, "record \(record.id) twice in a catch-up")
                truth[record.id] = (record.revision ?? -1, record.values)
            }

            // No revision was given to two change sets.
            let revisions = acknowledged.map(\.revision)
            #expect(Set(revisions).count == revisions.count, "a revision acknowledged twice")
            #expect(revisions.allSatisfy { $0 > seedRevision && $0 <= everything.maxRevision })
            // Every acknowledged create is there once, as written.
            let creates = acknowledged.filter { $0.base == nil }
            #expect(creates.count == writers * requestsEach / 2)
            for create in creates {
                #expect(truth[create.id]?.1 == [.text(create.name)], "create \(create.name) (id \(create.id)) missing or changed")
            }
            #expect(truth.count == hot + creates.count, "the data set holds records nobody was told of")
            // The acknowledged updates of each hot list form one chain from the seed, and the
            // data set holds the last.
            var updates = 0
            for id in hotIDs {
                let chain = acknowledged.filter { $0.id == id && $0.base != nil }.sorted { $0.revision < $1.revision }
                updates += chain.count
                var base = seedRevision
                for update in chain {
                    #expect(update.base == base, "list \(id): an update acknowledged at \(update.revision) was based on \(update.base ?? -1), not \(base)")
                    base = update.revision
                }
                let last = chain.last
                #expect(truth[id]?.0 == (last?.revision ?? seedRevision))
                if let last { #expect(truth[id]?.1 == [.text(last.name)]) }
            }
            #expect(updates > 0)
            // Each reader, page by page, ended with exactly the data set.
            #expect(replicas.count == 2)
            for replica in replicas {
                #expect(replica.count == truth.count)
                for (id, (revision, values)) in truth {
                    #expect(replica[id]?.0 == revision && replica[id]?.1 == values, "a reader holds record \(id) at \(replica[id]?.0 ?? -1), not \(revision)")
                }
            }
        }
    }

    enum Part: Sendable {
        case writer([Acknowledged])
        case reader([Int64: (Int64, ContiguousArray<Value>)])
    }

    /// `requests` requests of one client, alternately a create and a rename of a hot list (at
    /// the revision the writer last saw it, taking the truth from a conflict and trying again),
    /// each sent again to `other` as a retry, whose answer must be the first one.
    static func write(
        as writer: Int, requests: Int, on server: RevisionServer, retryingOn other: RevisionServer, hot: [Int64], seedRevision: Int64
    ) async throws -> [Acknowledged] {
        var known = Dictionary(uniqueKeysWithValues: hot.map { ($0, seedRevision) })
        var (cursor, acknowledged, request) = (Int64(0), [Acknowledged](), 0)
        while acknowledged.count < requests {
            let creating = acknowledged.count % 2 == 0
            let name = "writer \(writer) #\(acknowledged.count)"
            // Writers 0 and 1 (on different servers) rename the same lists in turn, as do 2 and 3.
            let target = hot[(acknowledged.count / 2 + writer / 2) % hot.count]
            let base = known[target]!
            let changeSet = creating ? createList(name) : renameList(target, to: name, at: base)
            let sent = SyncRequest(maxRevision: cursor, changeSets: [changeSet], clientID: "writer \(writer)", requestID: "r\(request)", limit: 1_000)
            request += 1
            let answer = try await server.handle(sent)
            let retried = try await other.handle(sent)
            let own = try #require(answer.changeSets.last)
            if own.conflict == true {
                // A conflict changed nothing and kept no reply: its retry is answered anew, a
                // conflict again (the record only moves on).
                #expect(retried.changeSets.last?.conflict == true)
            } else {
                #expect(retried.changeSets.last == own, "writer \(writer): a retry on the other server was answered differently")
                #expect(retried.maxRevision == answer.maxRevision && retried.hasMore == answer.hasMore)
            }
            // Its catch-up tells the writer where the hot lists stand.
            for record in answer.changeSets.dropLast().flatMap({ (changeSet: ChangeSet) in changeSet.entities.flatMap(\.records) }) where known[record.id] != nil {
                known[record.id] = record.revision
            }
            cursor = answer.maxRevision
            if own.conflict == true {
                #expect(!creating, "a create was refused")
                let truth = try #require(own.entities.first?.records.first { $0.id == target })
                known[target] = truth.revision
                continue
            }
            let record = try #require(own.entities.first?.records.first)
            let revision = try #require(record.revision)
            acknowledged.append(Acknowledged(id: record.id, name: name, revision: revision, base: creating ? nil : base))
            if !creating { known[target] = revision }
        }
        return acknowledged
    }

    /// Catches up on `server` in pages of `pageLimit` until `untilDone` says the writers have
    /// finished and a page finds nothing more; every page's revisions must lie after the
    /// cursor and up to the page's end. The records as the reader holds them at the end.
    static func follow(_ server: RevisionServer, pageLimit: Int, untilDone: @Sendable () -> Bool) async throws -> [Int64: (Int64, ContiguousArray<Value>)] {
        var (cursor, replica) = (Int64(0), [Int64: (Int64, ContiguousArray<Value>)]())
        while true {
            let done = untilDone()
            let page = try await server.handle(SyncRequest(maxRevision: cursor, changeSets: [], limit: pageLimit))
            #expect(page.maxRevision >= cursor, "a page went back from \(cursor) to \(page.maxRevision)")
            for record in page.changeSets.flatMap({ $0.entities.flatMap(\.records) }) {
                let revision = record.revision ?? -1
                #expect(revision > cursor && revision <= page.maxRevision, "revision \(revision) outside (\(cursor), \(page.maxRevision)]")
                replica[record.id] = (revision, record.values)
            }
            let empty = page.changeSets.allSatisfy { $0.entities.allSatisfy(\.records.isEmpty) }
            cursor = page.maxRevision
            if done && empty && !page.hasMore { return replica }
            if empty { try await Task.sleep(for: .milliseconds(2)) }
        }
    }

    static func renameList(_ id: Int64, to name: String, at revision: Int64) -> ChangeSet {
        let record = WireRecord(id: id, present: FieldMask.all(count: 1), values: [.text(name)], revision: revision)
        return ChangeSet(entities: [EntityChanges(entity: "lists", update: [id], records: [record])])
    }

    func revisionsAndIDs(_ changeSets: [ChangeSet]) -> [(revision: Int64?, id: Int64)] {
        changeSets.flatMap { $0.entities.flatMap { $0.records.map { ($0.revision, $0.id) } } }
    }
}

/// A count that tasks bring down, read from others.
final class Countdown: Sendable {
    private let left: Atomic<Int>
    init(_ count: Int) { left = Atomic(count) }
    func countDown() { left.subtract(1, ordering: .releasing) }
    var isOver: Bool { left.load(ordering: .acquiring) <= 0 }
}
