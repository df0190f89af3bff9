import FieldMerge
import FieldMergeSQLite
@testable import FieldMergeSync
import FieldMergeProtocol
@testable import FieldMergeServer
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
}
