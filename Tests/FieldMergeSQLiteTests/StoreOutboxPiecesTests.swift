import FieldMerge
@testable import FieldMergeSQLite
import Testing

/// `pendingChanges(limit:)` reads the outbox in pieces: the limit, the order and the parked
/// changes it skips come out as if it read it whole.
@Suite struct StoreOutboxPiecesTests {
    @Test func aLimitAcrossPieces_keepsTheOrderAndSkipsWhatIsParked() throws {
        let store = try memoryStore()
        let count = Store.outboxPiece + 900
        var ids: [Int64] = []
        try store.database.transaction {
            for n in 0..<count { ids.append(try store.insert("lists", values: [.text("list \(n)")])) }
        }
        // Ten refused changes early in the first piece wait aside; a sync does not send them.
        for id in ids[5..<15] { try store.park("lists", id: id, code: "refused", message: "no") }
        let expected = Array(ids[0..<5] + ids[15...])
        #expect(try store.pendingChanges().map(\.id) == expected)
        #expect(try store.pendingChanges(limit: Store.outboxPiece + 100).map(\.id) == Array(expected.prefix(Store.outboxPiece + 100)))
        #expect(try store.pendingChanges(limit: 3).map(\.id) == Array(ids[0..<3]))
        #expect(try store.pendingChanges(limit: 0).isEmpty)
        #expect(try store.pendingChanges(includingParked: true).map(\.id) == ids)
        #expect(try store.pendingChanges(limit: 7, includingParked: true).map(\.id) == Array(ids[0..<7]))
        // A piece's worth acknowledged by the server leaves the outbox: the limit then reaches
        // past it.
        let acknowledged = try ids[15..<(15 + Store.outboxPiece)].map { id in
            AcknowledgedRecord(try #require(try store.record("lists", id: id)), revision: 1)
        }
        try store.apply(ServerChanges(remaps: [], records: acknowledged, maxRevision: 1))
        #expect(try store.pendingChanges(limit: 10).map(\.id) == Array(ids[0..<5] + ids[(15 + Store.outboxPiece)..<(20 + Store.outboxPiece)]))
    }
}
