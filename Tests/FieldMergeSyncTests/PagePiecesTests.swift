import FieldMerge
import FieldMergeProtocol
import FieldMergeSQLite
@testable import FieldMergeServer
@testable import FieldMergeSync
import Testing

/// A prefetched catch-up page is read in pieces on another thread while the client applies
/// them (`PagePieces`): the result is the page's, whatever the piece size, and a page that
/// fails halfway leaves nothing of itself.
@Suite struct PagePiecesTests {
    /// A writer's 25 lists in 25 revisions, read by a second client; then the reader edits
    /// lists 1–5 locally while the writer renames lists 1–12, lists 1–3 twice, in 15 more
    /// revisions.
    func editedWorld() async throws -> World {
        let world = try World(clients: 2, batchSize: 4)
        let (writer, reader) = (world.clients[0], world.clients[1])
        for n in 0..<25 {
            _ = try await writer.withStore { try $0.insert("lists", values: [.text("list \(n)")]) }
            _ = try await writer.sync()
        }
        _ = try await reader.sync()
        _ = try await reader.withStore { store in
            for id in Int64(1)...5 { try store.update("lists", id: id, ["name": .text("reader \(id)")]) }
        }
        for (round, ids) in [(1, Int64(1)...12), (2, 1...3)] {
            for id in ids {
                _ = try await writer.withStore { try $0.update("lists", id: id, ["name": .text("writer \(id) \(round)")]) }
                _ = try await writer.sync()
            }
        }
        return world
    }

    @Test(arguments: [1, 3, 2_000]) func anyPieceSize_endsWhereWholePagesEnd(pieces: Int) async throws {
        let world = try await editedWorld()
        let reader = world.clients[1]
        await reader.setPieceRecords(pieces)
        let summary = try await reader.sync()
        // The edits go out with the first request; the pages after its answer are
        // prefetched, and read in pieces.
        #expect(summary.rounds >= 3)
        #expect(summary.merged == 5, "lists 1–5, each edited on both sides, merged once (in the first piece naming them)")
        let contents = try await world.converge()
        #expect(contents.count == 25)
        // The same edits, applied as whole pages, end in the same place.
        let whole = try await editedWorld()
        await whole.clients[1].setPrefetch(false)
        let wholeSummary = try await whole.clients[1].sync()
        #expect(wholeSummary.rounds == summary.rounds)
        #expect(wholeSummary.received == summary.received && wholeSummary.merged == summary.merged)
        #expect(try await whole.converge() == contents)
    }

    @Test func aPageCutShortAfterAPieceWasWritten_leavesNothing_andTheTriggersStay() async throws {
        // 2,500 lists in change sets of 1,000, 1,000 and 500; pages of one change set, the
        // second read in pieces of 500 (enough for a piece to drop the capture triggers for
        // its writes) and cut short two thirds of the way through.
        let world = try World(clients: 1, batchSize: 1_000)
        let writer = world.clients[0]
        for count in [1_000, 1_000, 500] {
            _ = try await writer.withStore { store in
                for n in 0..<count { try store.insert("lists", values: [.text("list \(n)")]) }
            }
            _ = try await writer.sync()
        }
        let transport = CuttingTransport(inner: world.transport, cutting: 2)
        let reader = SyncClient(
            store: try Store(.memory, schema: world.schema, replica: ReplicaID(7)), transport: transport, batchSize: 1_000)
        await reader.setPieceRecords(500)
        await reader.setCatchUpCommits(CatchUpCommits(interval: .seconds(3_600), records: 100_000))

        await #expect(throws: (any Error).self) { try await reader.sync() }
        #expect(await transport.cut == 1)
        // The first page was applied in the same transaction: both are gone.
        let (revision, lists) = try await reader.withStore { store in
            (store.maxRevision, try store.database.rows("SELECT count(*) FROM lists"))
        }
        #expect(revision == 0)
        #expect(lists == [[.integer(0)]])
        // A write with plain SQL is still taken in: the capture triggers are there.
        let waiting = try await reader.withStore { store in
            try store.database.execute("INSERT INTO lists (id, name) VALUES (-100, 'Plain')")
            return try store.unsyncedCount().waiting
        }
        #expect(waiting == 1)

        _ = try await reader.sync()
        _ = try await reader.sync()
        #expect(try await world.contents(reader) == world.serverContents())
        #expect(try await world.serverContents().count == 2_501)
        // The pages read in pieces this time dropped the triggers and made them again.
        let after = try await reader.withStore { store in
            try store.database.execute("INSERT INTO lists (id, name) VALUES (-200, 'Plain again')")
            return try store.unsyncedCount().waiting
        }
        #expect(after == 1)
    }
}

/// Passes requests to the in-process server, but gives the answer to request `cutting` (1
/// is the first) inflated and cut two thirds of the way through, once.
actor CuttingTransport: SyncTransport {
    let inner: InProcessTransport
    let cutting: Int
    var calls = 0
    var cut = 0

    init(inner: InProcessTransport, cutting: Int) {
        self.inner = inner
        self.cutting = cutting
    }

    func send(_ body: [UInt8], gzip: Bool) async throws -> [UInt8] {
        calls += 1
        let answer = try await inner.send(body, gzip: gzip)
        guard calls == cutting else { return answer }
        cut += 1
        let json = try Gzip.decompressIfGzip(answer, limit: WireLimits().maxDecompressedBytes)
        return Array(json[..<(json.count * 2 / 3)])
    }
}

extension SyncClient.Exchange {
    /// The page, with its records read from its pieces when it is read in pieces: the
    /// response, and how many records each piece held.
    func read() -> (response: SyncResponse, pieces: [Int]) {
        guard let undecoded else { return (response, response.changeSets.flatMap { $0.entities.map(\.records.count) }) }
        var pieces: [Int] = []
        while true {
            switch undecoded.next() {
            case .piece(let piece): pieces.append(piece.records.count)
            case .end(let page): return (page, pieces)
            case .failed(let error): Issue.record(error); return (response, pieces)
            }
        }
    }
}
