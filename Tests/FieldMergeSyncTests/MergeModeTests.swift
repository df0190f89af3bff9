import FieldMerge
import FieldMergeSQLite
@testable import FieldMergeSync
import FieldMergeProtocol
@testable import FieldMergeServer
import FieldMergeServerSQLite
import FieldMergeTestSupport
import Foundation
import Testing

/// The server's merge mode: stale updates folded in field by field.
@Suite struct MergeModeTests {
    let schema: Schema
    let notes: Entity
    static let now: UInt64 = 1_700_000_000_000

    init() throws {
        schema = try Schema([
            Entity("notes", fields: [
                Field("title", .text), Field("body", .text, strategy: .text), Field("priority", .integer, strategy: .max),
                Field("hits", .integer, strategy: .counter), Field("tags", .textSet, strategy: .union),
                Field("owner", .text, strategy: .serverWins),
            ]),
        ])
        notes = schema.entity("notes")!
    }

    func stamp(_ offset: UInt64, _ replica: UInt64) -> Stamp {
        Stamp(milliseconds: Self.now - 10_000 + offset, replica: ReplicaID(replica))
    }

    func server(_ location: Database.Location = .memory, mode: RevisionServer.Mode = .merge) throws -> RevisionServer {
        var options = RevisionServer.Options()
        options.mode = mode
        return try RevisionServer(location, schema: schema, options: options, wall: ManualWallClock(milliseconds: Self.now))
    }

    /// Note 1 at revision 1: title "t", priority 7, hits 10, tags {a}, owner "o".
    func seed(_ server: RevisionServer) async throws {
        let create = wire(notes, -1, ["title": "t", "body": "b", "priority": 7, "hits": 10, "tags": .textSet(["a"]), "owner": "o"],
                          stamp: stamp(0, 9))
        _ = try await server.handle(request(changes("notes", create: [create], schema: schema), maxRevision: 0))
    }

    func request(_ changes: EntityChanges, maxRevision: Int64 = 1) -> SyncRequest {
        SyncRequest(maxRevision: maxRevision, changeSets: [ChangeSet(entities: [changes], conflict: nil)],
                    clientID: nil, requestID: nil, limit: nil)
    }

    /// Sends an update of note 1 made on `base` and returns the answer's change set.
    func update(_ server: RevisionServer, _ values: [String: Value], base: Int64 = 1, at offset: UInt64, replica: UInt64) async throws -> ChangeSet {
        let record = wire(notes, 1, values, revision: base, stamp: stamp(offset, replica))
        let current = await server.maxRevision
        let response = try await server.handle(request(changes("notes", update: [record], schema: schema), maxRevision: current))
        return try #require(response.changeSets.last)
    }

    func value(_ server: RevisionServer, _ field: String) throws -> SQLValue? {
        try server.database.scalar("SELECT \(Database.quote(field)) FROM notes WHERE id = 1")
    }

    @Test func staleUpdateOfOtherFieldsIsMergedAndConfirmed() async throws {
        let server = try server()
        try await seed(server)
        await #expect(try update(server, ["title": "A"], at: 100, replica: 1).conflict != true)
        let answer = try await update(server, ["owner": "B"], at: 200, replica: 2)
        #expect(answer.conflict != true)
        #expect(answer.entities.first?.update == [1])
        let confirmed = try #require(answer.entities.first?.records.first)
        #expect(confirmed.revision == 3)
        #expect(confirmed.values[notes.fieldIndex("title")!] == .text("A"))
        #expect(confirmed.values[notes.fieldIndex("owner")!] == .text("B"))
        #expect(await server.maxRevision == 3)
    }

    @Test func strictModeRefusesTheSameStaleUpdate() async throws {
        let server = try server(mode: .strict)
        try await seed(server)
        _ = try await update(server, ["title": "A"], at: 100, replica: 1)
        let answer = try await update(server, ["owner": "B"], at: 200, replica: 2)
        #expect(answer.conflict == true)
        #expect(try value(server, "owner") == .text("o"))
    }

    @Test func fieldOnlyTheClientChangedTakesItsValueEvenUnderMax() async throws {
        let server = try server()
        try await seed(server)
        _ = try await update(server, ["title": "A"], at: 100, replica: 1)  // revision 2 touches title only
        _ = try await update(server, ["priority": 3], at: 200, replica: 2)  // priority untouched since 1: lowered to 3
        #expect(try value(server, "priority") == .integer(3))
        _ = try await update(server, ["priority": 2], at: 300, replica: 3)  // changed at 3, after base 1: max(2, 3)
        #expect(try value(server, "priority") == .integer(3))
        _ = try await update(server, ["priority": 9], at: 50, replica: 4)  // max(9, 3), although older
        #expect(try value(server, "priority") == .integer(9))
    }

    @Test func sameFieldLastEditWinsByStampEitherWay() async throws {
        let server = try server()
        try await seed(server)
        _ = try await update(server, ["title": "A"], at: 200, replica: 1)
        let older = try await update(server, ["title": "B"], at: 100, replica: 2)
        #expect(older.conflict != true)
        #expect(older.entities.first?.records.first?.values[0] == .text("A"))
        #expect(older.entities.first?.records.first?.stamps?[0] == stamp(200, 1))
        let newer = try await update(server, ["title": "C"], at: 300, replica: 3)
        #expect(newer.entities.first?.records.first?.values[0] == .text("C"))
        #expect(try value(server, "title") == .text("C"))
    }

    @Test func serverWinsAndUnionDecideOnTheServer() async throws {
        let server = try server()
        try await seed(server)
        _ = try await update(server, ["owner": "A", "tags": .textSet(["a", "x"])], at: 100, replica: 1)
        let answer = try await update(server, ["owner": "B", "tags": .textSet(["a", "y"])], at: 200, replica: 2)
        #expect(answer.conflict != true)
        #expect(try value(server, "owner") == .text("A"))
        let tags = try #require(answer.entities.first?.records.first?.values[notes.fieldIndex("tags")!])
        #expect(tags == .textSet(["a", "x", "y"]))
        // The union is a computed value: newer than both sides' stamps.
        let tagStamp = try #require(answer.entities.first?.records.first?.stamps?[notes.fieldIndex("tags")!])
        #expect(tagStamp > stamp(200, 2))
    }

    @Test func fieldsThatNeedTheAncestorAreAnsweredAsConflicts() async throws {
        for field in ["hits", "body"] {
            let server = try server()
            try await seed(server)
            let first: Value = field == "hits" ? 11 : "b1", second: Value = field == "hits" ? 12 : "b2"
            _ = try await update(server, [field: first], at: 100, replica: 1)
            let answer = try await update(server, [field: second, "title": "B"], at: 200, replica: 2)
            #expect(answer.conflict == true, "\(field)")
            #expect(answer.entities.first?.records.first?.values[notes.fieldIndex(field)!] == first)
            #expect(try value(server, "title") == .text("t"))
            #expect(await server.maxRevision == 2)
        }
    }

    @Test func staleDeleteIsStillAConflict() async throws {
        let server = try server()
        try await seed(server)
        _ = try await update(server, ["title": "A"], at: 100, replica: 1)
        let response = try await server.handle(request(changes("notes", delete: [(1, 1)], schema: schema), maxRevision: 2))
        #expect(response.changeSets.last?.conflict == true)
        #expect(try value(server, "title") == .text("A"))
    }

    @Test func fieldRevisionsSurviveAReopen() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("fm-merge-\(UInt64.random(in: 0...UInt64.max)).sqlite").path
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) } }
        do {
            let first = try server(.file(path: path))
            try await seed(first)
            _ = try await update(first, ["title": "A"], at: 100, replica: 1)
            first.database.close()
        }
        let reopened = try server(.file(path: path))
        _ = try await update(reopened, ["priority": 3], at: 200, replica: 2)
        #expect(try value(reopened, "priority") == .integer(3))
        #expect(try value(reopened, "title") == .text("A"))
    }

    @Test func clientsConvergeInMergeModeWithoutConflictRounds() async throws {
        let world = try World(clients: 2, mode: .merge)
        let (a, b) = (world.clients[0], world.clients[1])
        try await a.withStore { store in
            let list = try store.insert("lists", values: ["Home"])
            try store.insert("tasks", values: ["Milk", false, 5, .integer(list)])
        }
        _ = try await a.sync()
        _ = try await b.sync()
        _ = try await a.withStore { try $0.update("tasks", id: 1, ["title": "Oat milk"]) }
        _ = try await b.withStore { try $0.update("tasks", id: 1, ["done": true]) }
        _ = try await a.sync()
        let summary = try await b.sync()
        #expect(summary.conflictingChangeSets == 0)
        // Counters need the ancestor: the server answers a conflict, the client merges and resends.
        _ = try await a.withStore { try $0.update("tasks", id: 1, ["count": 6]) }
        _ = try await b.withStore { try $0.update("tasks", id: 1, ["count": 8]) }
        _ = try await a.sync()
        let counted = try await b.sync()
        #expect(counted.conflictingChangeSets == 1)
        let contents = try await world.converge()
        #expect(contents.contains(#"tasks:integer(1)|text("Oat milk")|integer(1)|integer(9)|integer(1)"#))
    }
}
