import FieldMerge
import FieldMergeProtocol
import FieldMergeSQLite
@testable import FieldMergeServer
@testable import FieldMergeSync
import Testing

/// What applying one live page costs a device's store, in statements: with a thousand
/// devices in one process (`bench live`) every statement of a delivery is felt a thousand
/// times, and on a phone each is a wake of SQLite's pages.
@Suite struct LivePageCostTests {
    @Test func onePageOfOneRecordTakesFewStatements() async throws {
        let world = try World(clients: 2)
        let (writer, device) = (world.clients[0], world.clients[1])
        try await writer.write { _ = try $0.insert("lists", values: ["Home"]) }
        _ = try await writer.sync()
        _ = try await device.sync()
        var events = try world.transport.server.live.subscribe(identity: nil).makeAsyncIterator()
        #expect(await events.next() == .ready(revision: 1))
        try await writer.write { store in
            guard let id = try store.database.scalar("SELECT id FROM lists").flatMap({ if case .integer(let id) = $0 { id } else { nil } }) else { return }
            _ = try store.update("lists", id: id, ["name": .text("Work")])
        }
        _ = try await writer.sync()
        guard let page = await events.next(), case .changes = page else {
            Issue.record("no page")
            return
        }
        await device.withStore { $0.database.statementsRun = [] }
        guard case .applied(let summary) = await device.handle(page) else {
            Issue.record("the page was not applied")
            return
        }
        let run = await device.withStore { store in
            defer { store.database.statementsRun = nil }
            return store.database.statementsRun ?? []
        }
        #expect(summary.received == 1)
        #expect(try await LiveSyncTests.lists(device) == ["Work"])
        // Besides the record's own read and upsert (statements the table keeps prepared): the
        // request in flight, BEGIN, the own-writes marker set and cleared, writes made with
        // plain SQL, the outbox, what is pending or deleted (one query), the state (one update
        // of its three rows), COMMIT. No scopes: nothing written for them. Whether a rebase
        // is under way comes from the schema in memory: a query of `sqlite_master` reads
        // every table, index and trigger of the store, and was a fifth of a delivery's CPU.
        #expect(run.count <= 9, "statements: \(run)")
        #expect(!run.contains { $0.contains("'scopes'") })
        #expect(!run.contains { $0.contains("sqlite_master") }, "statements: \(run)")
    }
}
