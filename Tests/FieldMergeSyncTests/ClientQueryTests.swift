import FieldMerge
import FieldMergeSQLite
import FieldMergeSync
import Testing

/// The `lists` entity of the sync tests' schema, as a typed record.
struct SyncedList: StoredRecord, Equatable, Sendable {
    var id: Int64 = 0
    var name = ""
    static let table = RecordTable<SyncedList>("lists", [.text("name", \.name)])
}

@Suite struct ClientQueryTests {
    @Test(.timeLimit(.minutes(1))) func aClientsLiveQuery_refreshesAfterLocalWritesAndSyncs_andItsTypedFeedHearsThem() async throws {
        let world = try World(clients: 2)
        let (a, b) = (world.clients[0], world.clients[1])
        var lists = try await b.observe(SyncedList.all.order(\.name)).makeAsyncIterator()
        var changes = await b.changes(of: SyncedList.self).makeAsyncIterator()
        let empty = try await lists.next()
        #expect(empty == [])

        // A local write on b.
        try await b.write { store in
            var home = SyncedList(name: "Home")
            try store.insert(&home)
        }
        let local = try await lists.next()
        #expect(local?.map(\.name) == ["Home"])
        let inserted = await changes.next()
        #expect(inserted?.origin == .local && inserted?.inserted == [-1])

        // A write elsewhere, received by b's sync (with b's own upload remapped).
        try await a.write { store in _ = try store.insert("lists", values: ["Attic"]) }
        _ = try await a.sync()
        _ = try await b.sync()
        var last = try await lists.next()
        while last?.map(\.name) != ["Attic", "Home"], last != nil { last = try await lists.next() }
        #expect(last?.map(\.name) == ["Attic", "Home"])
        #expect(last?.allSatisfy { $0.id > 0 } == true)
        var synced = await changes.next()
        while synced?.origin != .sync, synced != nil { synced = await changes.next() }
        #expect(synced?.inserted.contains(1) == true)
        #expect(synced?.remapped == [StoreChange.Remap(entity: "lists", temporary: -1, permanent: 2)])
    }
}
