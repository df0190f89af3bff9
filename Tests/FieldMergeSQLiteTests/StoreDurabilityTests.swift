import FieldMerge
@testable import FieldMergeSQLite
import Testing

struct InjectedCrash: Error {}

@Suite struct StoreDurabilityTests {
    @Test func errorInsideApply_leavesNoPartialState() throws {
        let store = try memoryStore()
        let id = try store.insert("lists", values: ["A"])
        let acknowledged = AcknowledgedRecord(try #require(try store.record("lists", id: id)).withID(50), revision: 9)
        let error = #expect(throws: StoreError.self) {
            try store.apply(ServerChanges(remaps: [("lists", id, 50)], records: [acknowledged], maxRevision: 9)) {
                throw InjectedCrash()
            }
        }
        #expect(error?.code == .aborted)
        #expect(store.maxRevision == 0)
        #expect(try store.record("lists", id: id)?.values == ["A"])
        #expect(try store.record("lists", id: 50) == nil)
        #expect(try store.permanentID("lists", temporary: id) == nil)
        #expect(try store.pendingChanges().map(\.kind) == [.create])
    }

    @Test func reopeningAFile_keepsOutboxClockCounterAndAncestors() throws {
        let folder = TemporaryFolder()
        defer { folder.remove() }
        let path = folder.file("replica.sqlite")
        let wall = ManualWallClock(milliseconds: 5_000)
        var lastClock: UInt64 = 0
        do {
            let store = try Store(.file(path: path), schema: storeSchema(), replica: ReplicaID(77), wall: wall)
            let acknowledged = Record(entity: "lists", id: 3, values: ["Server"], stamps: [Stamp(clock: 10, replica: ReplicaID(1))])
            try store.apply(ServerChanges(records: [AcknowledgedRecord(acknowledged, revision: 4)], maxRevision: 4))
            try store.update("lists", id: 3, ["name": "Mine"])
            try store.insert("lists", values: ["New"])
            lastClock = store.clock.last
            store.database.close()
        }
        wall.set(milliseconds: 1_000)  // the wall clock went back while the app was closed
        let reopened = try Store(.file(path: path), schema: storeSchema(), wall: wall)
        #expect(reopened.replica == ReplicaID(77))
        #expect(reopened.maxRevision == 4)
        #expect(reopened.nextTemporaryID == -2)
        #expect(reopened.clock.last == lastClock)
        #expect(try reopened.ancestor("lists", id: 3)?.record.values == ["Server"])
        #expect(try reopened.ancestor("lists", id: 3)?.revision == 4)
        #expect(try reopened.pendingChanges().map(\.kind) == [.update, .create])
        var clock = reopened.clock
        #expect(clock.now().clock > lastClock)
    }

    @Test func reopeningWithAnotherSchema_saysWhatDiffers() throws {
        let folder = TemporaryFolder()
        defer { folder.remove() }
        let path = folder.file("replica.sqlite")
        _ = try Store(.file(path: path), schema: storeSchema(), replica: ReplicaID(1))
        let other = try Schema([Entity("lists", fields: [Field("name", .text), Field("color", .integer)])])
        do {
            _ = try Store(.file(path: path), schema: other)
            Issue.record("opening with another schema must fail")
        } catch {
            #expect(error.code == .schemaMismatch)
            #expect(error.message.contains("color"))
            #expect(error.message.contains("tasks"))
        }
    }

    @Test func lockedDatabase_givesABusyErrorAndLosesNothing() throws {
        let folder = TemporaryFolder()
        defer { folder.remove() }
        let path = folder.file("replica.sqlite")
        var options = Database.Options()
        options.busyTimeoutMilliseconds = 50
        let store = try Store(.file(path: path), schema: storeSchema(), replica: ReplicaID(1), options: options)
        let id = try store.insert("lists", values: ["A"])
        let other = try Database(.file(path: path), options: options)
        try other.execute("BEGIN IMMEDIATE")
        do {
            try store.update("lists", id: id, ["name": "B"])
            Issue.record("a write while another connection holds the lock must fail")
        } catch {
            #expect(error.isBusy)
        }
        try other.execute("ROLLBACK")
        #expect(try store.record("lists", id: id)?.values == ["A"])
        #expect(try store.update("lists", id: id, ["name": "B"]) == FieldMask([0]))
        #expect(try store.pendingChanges().first?.record.values == ["B"])
    }

    @Test func readOnlyDatabase_refusesWritesClearly() throws {
        let folder = TemporaryFolder()
        defer { folder.remove() }
        let path = folder.file("replica.sqlite")
        let writer = try Store(.file(path: path), schema: storeSchema(), replica: ReplicaID(1))
        let id = try writer.insert("lists", values: ["A"])
        writer.database.close()
        var options = Database.Options()
        options.readOnly = true
        let reader = try Store(.file(path: path), schema: storeSchema(), options: options)
        #expect(try reader.record("lists", id: id)?.values == ["A"])
        do {
            try reader.insert("lists", values: ["B"])
            Issue.record("a read-only store must refuse writes")
        } catch {
            #expect(error.underlying?.isReadOnly == true)
        }
        #expect(reader.nextTemporaryID == -2)
    }

    @Test func openingAForeignDatabase_isRefused() throws {
        let folder = TemporaryFolder()
        defer { folder.remove() }
        let path = folder.file("other.sqlite")
        let database = try Database(.file(path: path))
        try database.execute("CREATE TABLE users (id INTEGER PRIMARY KEY)")
        database.close()
        #expect(throws: StoreError.self) { try Store(.file(path: path), schema: storeSchema()) }
    }

    @Test func snapshot_startsANewReplicaWithTheDataAndRevision() throws {
        let folder = TemporaryFolder()
        defer { folder.remove() }
        let store = try Store(.file(path: folder.file("a.sqlite")), schema: storeSchema(), replica: ReplicaID(1))
        let lists = (1...100).map { Record(entity: "lists", id: Int64($0), values: [.text("L\($0)")], stamps: [Stamp(clock: 9, replica: ReplicaID(2))]) }
        try store.apply(ServerChanges(records: lists.map { AcknowledgedRecord($0, revision: 12) }, maxRevision: 12))
        let local = try store.insert("lists", values: ["unsent"])
        let refused = #expect(throws: StoreError.self) { try store.exportSnapshot(to: folder.file("snap.sqlite")) }
        #expect(refused?.code == .unsyncedChanges)
        try store.delete("lists", id: local)
        try store.exportSnapshot(to: folder.file("snap.sqlite"))
        let fresh = try Store.openSnapshot(at: folder.file("snap.sqlite"), schema: storeSchema(), replica: ReplicaID(3))
        #expect(fresh.replica == ReplicaID(3))
        #expect(fresh.maxRevision == 12)
        #expect(fresh.nextTemporaryID == -1)
        #expect(try fresh.pendingChanges().isEmpty)
        #expect(try fresh.record("lists", id: 42)?.values == ["L42"])
        #expect(try fresh.ancestor("lists", id: 42)?.revision == 12)
    }
}
