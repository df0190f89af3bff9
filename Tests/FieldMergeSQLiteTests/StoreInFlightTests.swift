import FieldMerge
@testable import FieldMergeSQLite
import Testing

/// The request in flight, which the store keeps in `__fm_state`: what it answers is what
/// the file holds, through commits, rollbacks, savepoints, a held transaction and a reopen.
@Suite struct StoreInFlightTests {
    struct Stop: Error {}
    let request = InFlightRequest(body: [1, 2, 3], gzip: true, fingerprint: "f")

    /// What the file holds, read past the store's memory.
    private func inFile(_ store: Store) throws -> Bool {
        try store.database.scalar("SELECT count(*) FROM \"__fm_state\" WHERE \"key\" = 'inFlight'") == .integer(1)
    }

    @Test func recordedAndCleared_asTheFileSays() throws {
        let store = try memoryStore()
        #expect(try store.inFlightRequest() == nil)
        try store.recordInFlight(request)
        #expect(try store.inFlightRequest() == request)
        #expect(try inFile(store))
        try store.clearInFlight()
        #expect(try store.inFlightRequest() == nil)
        #expect(try !inFile(store))
    }

    @Test func aRolledBackRecord_isNotInFlight_andARolledBackClearStillIs() throws {
        let store = try memoryStore()
        #expect(try store.inFlightRequest() == nil)
        var seen: InFlightRequest?
        #expect(throws: Stop.self) {
            try store.transaction {
                try store.recordInFlight(request)
                seen = try store.inFlightRequest()
                throw Stop()
            }
        }
        #expect(seen == request)
        #expect(try store.inFlightRequest() == nil)
        try store.recordInFlight(request)
        seen = request
        #expect(throws: Stop.self) {
            try store.transaction {
                try store.clearInFlight()
                seen = try store.inFlightRequest()
                throw Stop()
            }
        }
        #expect(seen == nil)
        #expect(try store.inFlightRequest() == request)
        // A savepoint undone alone.
        seen = nil
        try store.transaction {
            do {
                try store.transaction {
                    try store.clearInFlight()
                    throw Stop()
                }
            } catch is Stop {}
            seen = try store.inFlightRequest()
        }
        #expect(seen == request)
        #expect(try store.inFlightRequest() == request)
        #expect(try inFile(store))
    }

    @Test func aHeldTransactionRolledBack_bringsTheRequestBack() throws {
        let store = try memoryStore()
        try store.recordInFlight(request)
        try store.beginHeldTransaction()
        try store.clearInFlight()
        #expect(try store.inFlightRequest() == nil)
        store.rollBackHeldTransaction()
        #expect(try store.inFlightRequest() == request)
    }

    @Test func aReopenedFile_readsItsRequest() throws {
        let folder = TemporaryFolder()
        defer { folder.remove() }
        let path = folder.file("store.sqlite")
        do {
            let store = try Store(.file(path: path), schema: storeSchema(), replica: ReplicaID(1))
            #expect(try store.inFlightRequest() == nil)
            try store.recordInFlight(request)
        }
        let reopened = try Store(.file(path: path), schema: storeSchema())
        #expect(try reopened.inFlightRequest() == request)
    }
}
