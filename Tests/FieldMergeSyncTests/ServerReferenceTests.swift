import FieldMerge
import FieldMergeSQLite
@testable import FieldMergeSync
import FieldMergeProtocol
@testable import FieldMergeServer
import FieldMergeServerSQLite
import FieldMergeTestSupport
import Testing

/// References on the server: a change set's own cascades, dangling references, and paged
/// catch-up of children whose parents changed later. (Found by `fieldmerge simulate`.)
@Suite struct ServerReferenceTests {
    let schema: Schema
    let lists: Entity, tasks: Entity
    let stamp = Stamp(milliseconds: 1, replica: ReplicaID(1))

    init() throws {
        schema = try syncSchema()
        lists = schema.entity("lists")!
        tasks = schema.entity("tasks")!
    }

    func request(_ maxRevision: Int64, _ entities: [EntityChanges]) -> SyncRequest {
        SyncRequest(maxRevision: maxRevision, changeSets: [ChangeSet(entities: entities)])
    }

    func gone(_ id: Int64, width: Int, revision: Int64) -> WireRecord {
        WireRecord(id: id, present: FieldMask(), values: ContiguousArray(repeating: .null, count: width), stamps: nil, revision: revision)
    }

    /// List 1 with task 1 in it, at revision 1.
    func serverWithATask() async throws -> RevisionServer {
        let server = try RevisionServer(.memory, schema: schema)
        _ = try await server.handle(request(0, [
            EntityChanges(entity: "lists", create: [-1], records: [WireRecord(Record(lists, id: -1, values: ["Home"], stamp: stamp))]),
            EntityChanges(entity: "tasks", create: [-2], records: [WireRecord(Record(tasks, id: -2, values: ["Milk", false, 0, -1], stamp: stamp))]),
        ]))
        return server
    }

    @Test func deleteOfAParentSentWithItsCascadedChildren_commits() async throws {
        let server = try await serverWithATask()
        let response = try await server.handle(request(1, [
            EntityChanges(entity: "lists", delete: [1], records: [gone(1, width: 1, revision: 1)]),
            EntityChanges(entity: "tasks", delete: [1], records: [gone(1, width: 4, revision: 1)]),
        ]))
        #expect(response.changeSets.last?.conflict != true)
        #expect(await server.maxRevision == 2)
        #expect(try server.database.scalar("SELECT count(*) FROM tasks") == .integer(0))
        #expect(response.changeSets.last?.entities.first { $0.entity == "tasks" }?.delete == [1])
    }

    @Test func updateOfAChildTheParentsSetNullAlreadyCleared_commits() async throws {
        let setNull = try Schema([lists, Entity("tasks", fields: [
            Field("title", .text), Field("done", .bool), Field("count", .integer, strategy: .counter),
            Field("listID", .reference(to: "lists", onDelete: .setNull)),
        ])])
        let server = try RevisionServer(.memory, schema: setNull)
        let tasks = setNull.entity("tasks")!
        _ = try await server.handle(request(0, [
            EntityChanges(entity: "lists", create: [-1], records: [WireRecord(Record(lists, id: -1, values: ["Home"], stamp: stamp))]),
            EntityChanges(entity: "tasks", create: [-2], records: [WireRecord(Record(tasks, id: -2, values: ["Milk", false, 0, -1], stamp: stamp))]),
        ]))
        var cleared = WireRecord(Record(tasks, id: 1, values: ["Milk", false, 0, nil], stamp: stamp))
        cleared.revision = 1
        cleared.present = FieldMask([3])
        let response = try await server.handle(request(1, [
            EntityChanges(entity: "lists", delete: [1], records: [gone(1, width: 1, revision: 1)]),
            EntityChanges(entity: "tasks", update: [1], records: [cleared]),
        ]))
        #expect(response.changeSets.last?.conflict != true)
        #expect(try server.database.scalar("SELECT listID FROM tasks WHERE id = 1") == .null)
        // The child is answered once (the cascade and the client's update reached it), so the
        // answer decodes, also when replayed.
        let answered = try #require(response.changeSets.last?.entities.first { $0.entity == "tasks" })
        #expect(answered.records.map(\.id) == [1] && answered.update == [1])
        let codec = WireCodec(schema: setNull)
        #expect(try codec.decodeResponse(codec.encode(response)) == response)
    }

    @Test func createUnderADeletedParent_isAConflictWithTheParentsTruth() async throws {
        let server = try await serverWithATask()
        _ = try await server.handle(request(1, [EntityChanges(entity: "lists", delete: [1], records: [gone(1, width: 1, revision: 1)])]))
        let response = try await server.handle(request(2, [
            EntityChanges(entity: "tasks", create: [-1], records: [WireRecord(Record(tasks, id: -1, values: ["Paint", false, 0, 1], stamp: stamp))]),
        ]))
        let answer = try #require(response.changeSets.last)
        #expect(answer.conflict == true)
        #expect(answer.entities.first { $0.entity == "lists" }?.delete == [1])
        #expect(await server.maxRevision == 2)
        #expect(try server.database.scalar("SELECT count(*) FROM tasks") == .integer(0))
    }

    @Test func aDanglingReferenceInOneChangeSetLeavesTheOthersCommitted() async throws {
        let server = try await serverWithATask()
        let response = try await server.handle(SyncRequest(maxRevision: 1, changeSets: [
            ChangeSet(entities: [EntityChanges(entity: "tasks", create: [-1], records: [
                WireRecord(Record(tasks, id: -1, values: ["Ghost", false, 0, 99], stamp: stamp)),
            ])]),
            ChangeSet(entities: [EntityChanges(entity: "lists", create: [-2], records: [
                WireRecord(Record(lists, id: -2, values: ["Work"], stamp: stamp)),
            ])]),
        ]))
        #expect(response.changeSets.map { $0.conflict == true } == [true, false])
        #expect(try server.database.scalar("SELECT count(*) FROM lists") == .integer(2))
    }

    @Test func pagedCatchUp_neverSendsAChildBeforeItsParent() async throws {
        let world = try World(clients: 2, batchSize: 1)
        let (a, b) = (world.clients[0], world.clients[1])
        _ = try await a.withStore { try $0.insert("lists", values: ["Home"]) }
        _ = try await a.sync()
        _ = try await a.withStore { try $0.insert("tasks", values: ["Milk", false, 0, 1]) }
        _ = try await a.sync()
        _ = try await a.withStore { try $0.update("lists", id: 1, ["name": "House"]) }
        _ = try await a.sync()
        let summary = try await b.sync()
        #expect(summary.rounds >= 2)
        #expect(try await world.contents(b) == world.serverContents())
    }

    /// Grandparents too: a task whose list and the list's folder both changed later come
    /// in the task's page, and each page commits on a client whose foreign keys are checked.
    @Test func pagedCatchUp_bringsParentsOfParents() async throws {
        let schema = try Schema([
            Entity("folders", fields: [Field("name", .text)]),
            Entity("lists", fields: [Field("name", .text), Field("folderID", .reference(to: "folders", onDelete: .cascade))]),
            Entity("tasks", fields: [Field("title", .text), Field("listID", .reference(to: "lists", onDelete: .cascade))]),
        ])
        let transport = InProcessTransport(server: try RevisionServer(.memory, schema: schema))
        let writer = SyncClient(store: try Store(.memory, schema: schema, replica: ReplicaID(1)), transport: transport)
        // Inserted one sync after another, under the permanent id the last sync gave.
        func permanent(_ entity: String) async throws -> Value {
            let id = try await writer.withStore { try $0.database.scalar("SELECT max(id) FROM \(entity)") }
            guard case .integer(let value)? = id, value > 0 else { throw SyncError(.store, "no permanent id in \(entity)", isRetryable: false) }
            return .integer(value)
        }
        _ = try await writer.withStore { try $0.insert("folders", values: ["Work"]) }
        _ = try await writer.sync()
        let folder = try await permanent("folders")
        _ = try await writer.withStore { try $0.insert("lists", values: [.text("Today"), folder]) }
        _ = try await writer.sync()
        let list = try await permanent("lists")
        for title in ["Call", "Write"] {
            _ = try await writer.withStore { try $0.insert("tasks", values: [.text(title), list]) }
            _ = try await writer.sync()
        }
        let ids = try await writer.withStore { store in
            try ["folders", "lists", "tasks"].map { try store.database.rows("SELECT id FROM \($0) ORDER BY id").map { $0[0] } }
        }
        guard case .integer(let folderNow) = try #require(ids[0].first), case .integer(let listNow) = try #require(ids[1].first),
            case .integer(let firstTask) = try #require(ids[2].first)
        else { Issue.record("ids are not integers"); return }
        _ = try await writer.withStore { try $0.update("lists", id: listNow, ["name": "Tomorrow"]) }
        _ = try await writer.sync()
        _ = try await writer.withStore { try $0.update("folders", id: folderNow, ["name": "Home"]) }
        _ = try await writer.sync()
        // Revisions: 3 and 4 the tasks, 5 the list, 6 the folder. The page after 2 holds the
        // first task, its list (logged at 5) and the list's folder (logged at 6).
        let page = try await transport.server.handle(SyncRequest(maxRevision: 2, changeSets: [], limit: 1))
        #expect(page.hasMore && page.maxRevision == 3)
        let entities = page.changeSets.first?.entities.map { "\($0.entity):\($0.records.map(\.id))" }
        #expect(entities == ["folders:[\(folderNow)]", "lists:[\(listNow)]", "tasks:[\(firstTask)]"])
        let reader = SyncClient(store: try Store(.memory, schema: schema, replica: ReplicaID(2)), transport: transport, batchSize: 1)
        let summary = try await reader.sync()
        #expect(summary.rounds >= 4)
        let names = try await reader.withStore { try $0.database.rows("SELECT name FROM folders UNION ALL SELECT name FROM lists") }
        #expect(names.map { $0[0] } == [.text("Home"), .text("Tomorrow")])
        #expect(try await reader.withStore { try $0.database.scalar("SELECT count(*) FROM tasks") } == .integer(2))
    }
}
