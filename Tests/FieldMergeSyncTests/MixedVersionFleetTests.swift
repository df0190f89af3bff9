import FieldMerge
import FieldMergeProtocol
import FieldMergeSQLite
import FieldMergeServer
import FieldMergeServerSQLite
import FieldMergeSync
import Foundation
import Testing

/// The server moves to schema version 2 while some devices stay on version 1 for a while
/// (Specs/schema.md, "Mixed-version fleets"): the old devices are answered in their own
/// schema, never clear what they do not know, and get it when they upgrade.
@Suite struct MixedVersionFleetTests {
    static let v1Entities = [
        Entity("lists", fields: [Field("name", .text)]),
        Entity("tasks", fields: [Field("title", .text), Field("listID", .reference(to: "lists", onDelete: .cascade))]),
    ]

    /// Renames an entity and a field, adds a field with a default and an entity.
    static func v2() throws -> Schema {
        try Schema([
            Entity("boards", fields: [Field("label", .text, renamedFrom: "name")], renamedFrom: "lists"),
            Entity("tasks", fields: [
                Field("title", .text), Field("listID", .reference(to: "boards", onDelete: .cascade)),
                Field("minutes", .integer, strategy: .counter, default: .integer(0)),
            ]),
            Entity("comments", fields: [Field("body", .text), Field("taskID", .reference(to: "tasks", onDelete: .cascade))]),
        ], version: 2)
    }

    /// A folder with a server file at version 2 migrated from version 1, one seeded list and
    /// task, and `devices` v1 stores that synced them.
    struct Fleet {
        let folder: String
        let server: RevisionServer
        let transport: InProcessTransport

        func file(_ name: String) -> String { folder + "/" + name + ".sqlite" }

        func client(_ name: String, _ schema: Schema, replica: UInt64) throws -> SyncClient {
            SyncClient(store: try Store(.file(path: file(name)), schema: schema, replica: ReplicaID(replica)), transport: transport)
        }
    }

    static func fleet(devices: [String]) async throws -> Fleet {
        let folder = NSTemporaryDirectory() + "fm-mixed-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let v1 = try Schema(v1Entities)
        do {
            let transport = InProcessTransport(server: try RevisionServer(.file(path: folder + "/server.sqlite"), schema: v1))
            for (index, name) in devices.enumerated() {
                let client = SyncClient(
                    store: try Store(.file(path: folder + "/\(name).sqlite"), schema: v1, replica: ReplicaID(UInt64(index + 1))),
                    transport: transport)
                if index == 0 {
                    try await client.write { store in
                        let list = try store.insert("lists", values: [.text("Home")])
                        _ = try store.insert("tasks", values: [.text("Milk"), .integer(list)])
                    }
                }
                _ = try await client.sync()
                try await client.withStore { $0.database.close() }
            }
        }
        let server = try RevisionServer(.file(path: folder + "/server.sqlite"), schema: try v2())
        return Fleet(folder: folder, server: server, transport: InProcessTransport(server: server))
    }

    @Test func theServerKeepsTheVersionItLeft_withItsEntitiesCurrentNames() async throws {
        let fleet = try await Self.fleet(devices: ["a"])
        defer { try? FileManager.default.removeItem(atPath: fleet.folder) }
        let older = try #require(fleet.server.olderSchemas.first)
        #expect(fleet.server.olderSchemas.count == 1)
        #expect(older.schema.version == 1)
        #expect(older.fingerprint == (try Schema(Self.v1Entities)).fingerprint)
        #expect(older.currentNames == ["boards", "tasks"])
        // Reopened without migrating, it still answers version 1.
        let again = try RevisionServer(.file(path: fleet.folder + "/server2.sqlite"), schema: try Self.v2())
        #expect(again.olderSchemas.isEmpty)
    }

    @Test func anOldDevice_isAnsweredInItsSchema_andNeverClearsNewFields() async throws {
        let fleet = try await Self.fleet(devices: ["old", "new"])
        defer { try? FileManager.default.removeItem(atPath: fleet.folder) }
        let old = try fleet.client("old", try Schema(Self.v1Entities), replica: 1)
        let new = try fleet.client("new", try Self.v2(), replica: 2)
        #expect(await new.withStore { $0.migrations.map(\.description) } == [
            "rename entity lists to boards", "add entity comments", "rename field boards.name to label", "add field tasks.minutes",
        ])
        _ = try await new.sync()
        try await new.write { store in
            _ = try store.update("tasks", id: 1, ["minutes": .integer(25)])
            _ = try store.insert("comments", values: [.text("2 litres"), .integer(1)])
            _ = try store.update("boards", id: 1, ["label": "House"])
        }
        _ = try await new.sync()

        // The old device edits the fields it knows, creates a task, and syncs.
        try await old.write { store in
            _ = try store.update("tasks", id: 1, ["title": "Oat milk"])
            _ = try store.insert("tasks", values: [.text("Bread"), .integer(1)])
        }
        _ = try await old.sync()  // a conflict on task 1 (strict mode), merged and sent again
        #expect(try await old.read { try $0.record("lists", id: 1)?.values } == [.text("House")])
        #expect(try await old.read { try $0.pendingChanges().isEmpty })

        _ = try await new.sync()
        let task = try #require(try await new.read { try $0.record("tasks", id: 1) })
        #expect(task.values == [.text("Oat milk"), .integer(1), .integer(25)])  // minutes kept
        let bread = try #require(try await new.read { store -> Record? in
            guard case .integer(let id)? = try store.database.scalar("SELECT id FROM tasks WHERE title = 'Bread'") else { return nil }
            return try store.record("tasks", id: id)
        })
        #expect(bread.values[2] == .integer(0))  // the field's default
        #expect(bread.stamps[2] == Stamp.schemaDefault)  // older than any edit
        #expect(try await new.read { try $0.database.scalar("SELECT count(*) FROM comments") } == .integer(1))
    }

    /// In live mode an old device is sent pages in its own schema (Specs/live.md §2): what
    /// its version knows arrives without a request, what it lacks is left out.
    @Test func anOldDeviceInLiveMode_getsPagesInItsSchema() async throws {
        let fleet = try await Self.fleet(devices: ["old", "new"])
        defer { try? FileManager.default.removeItem(atPath: fleet.folder) }
        let old = try fleet.client("old", try Schema(Self.v1Entities), replica: 1)
        let new = try fleet.client("new", try Self.v2(), replica: 2)
        _ = try await new.sync()
        let outcomes = await old.startLive(over: fleet.transport)
        for await outcome in outcomes { if case .connected = outcome { break } }
        let requests = fleet.transport.requests
        try await new.write { store in
            _ = try store.update("tasks", id: 1, ["title": "Oat milk", "minutes": .integer(25)])
            _ = try store.insert("comments", values: [.text("2 litres"), .integer(1)])
            _ = try store.update("boards", id: 1, ["label": "House"])
        }
        _ = try await new.sync()
        var applied: SyncSummary?
        for await outcome in outcomes {
            if case .applied(let summary, _) = outcome {
                applied = summary
                break
            }
            if case .synced = outcome { break }  // poked: it asked itself
        }
        // The task and the list (its old name), not the comment; no request of its own.
        #expect(applied?.received == 2)
        #expect(fleet.transport.requests == requests + 1)
        #expect(try await old.read { try $0.record("tasks", id: 1)?.values } == [.text("Oat milk"), .integer(1)])
        #expect(try await old.read { try $0.record("lists", id: 1)?.values } == [.text("House")])
        await old.stopLive()
    }

    @Test func anOldDeviceThatUpgrades_catchesUpWhatItsVersionLacked() async throws {
        let fleet = try await Self.fleet(devices: ["old", "new"])
        defer { try? FileManager.default.removeItem(atPath: fleet.folder) }
        let new = try fleet.client("new", try Self.v2(), replica: 2)
        _ = try await new.sync()
        try await new.write { store in
            _ = try store.update("tasks", id: 1, ["minutes": .integer(25)])
            _ = try store.insert("comments", values: [.text("2 litres"), .integer(1)])
        }
        _ = try await new.sync()
        do {
            // The old device syncs under version 1 (it gets nothing it could not hold) and
            // keeps an edit unsent through its upgrade.
            let old = try fleet.client("old", try Schema(Self.v1Entities), replica: 1)
            _ = try await old.sync()
            try await old.write { store in _ = try store.update("tasks", id: 1, ["title": "Oat milk"]) }
            try await old.withStore { $0.database.close() }
        }
        let upgraded = try fleet.client("old", try Self.v2(), replica: 1)
        #expect(try await upgraded.read { $0.maxRevision } == 0)  // catches up from the start
        #expect(try await upgraded.read { try $0.record("tasks", id: 1)?.values[2] } == .integer(0))
        _ = try await upgraded.sync()
        _ = try await new.sync()
        for client in [upgraded, new] {
            #expect(try await client.read { try $0.record("tasks", id: 1)?.values } == [.text("Oat milk"), .integer(1), .integer(25)])
            #expect(try await client.read { try $0.database.scalar("SELECT body FROM comments") } == .text("2 litres"))
            #expect(try await client.read { try $0.pendingChanges().isEmpty })
        }
        let serverTask = try await fleet.server.withSQLite { try $0.scalar("SELECT title || '/' || minutes FROM tasks WHERE id = 1") }
        #expect(serverTask == .text("Oat milk/25"))
    }

    @Test func aDeviceNewerThanTheServer_orOfAnUnknownVersion_isRefused_andNothingChanges() async throws {
        let fleet = try await Self.fleet(devices: ["a"])
        defer { try? FileManager.default.removeItem(atPath: fleet.folder) }
        var v3Entities = try Self.v2().entities
        v3Entities[1].fields.append(Field("due", .date))
        let v3 = try Schema(v3Entities, version: 3)
        var strange = Self.v1Entities
        strange[0].fields.append(Field("color", .text))
        for (schema, says) in [(v3, "update the server"), (try Schema(strange), "update the app")] {
            let client = SyncClient(store: try Store(.memory, schema: schema), transport: fleet.transport)
            try await client.write { store in _ = try store.insert("tasks", values: schema.version == 3
                ? [.text("x"), .null, .integer(0), .null] : [.text("x"), .null]) }
            let before = await fleet.server.maxRevision
            let error = try #require(await #expect(throws: SyncError.self) { try await client.sync() })
            #expect(error.code == .rejected && !error.isRetryable)
            let rejected = try #require(error.cause as? SyncRequestRejected)
            #expect(rejected.status == 409)
            #expect(rejected.code == "incompatibleSchema")
            #expect(rejected.message.contains(says))
            #expect(await fleet.server.maxRevision == before)
            #expect(try await client.read { try $0.pendingChanges().count } == 1)
        }
    }

    /// The codec reads an older version's request even when its fingerprint comes after the
    /// change sets (another client's key order), and writes the answer in that version.
    @Test func theCodecReadsAnOlderRequest_whateverTheKeyOrder() throws {
        let v1 = try Schema(Self.v1Entities), v2 = try Self.v2()
        let outline = SchemaOutline(v1)
        let codec = WireCodec(schema: v2, older: [try OlderSchema(outline, version: 1, currentNames: ["boards", "tasks"])])
        let body = """
            {"maxRevision":0,"changeSets":[{"types":["lists"],"lists":{"create":[-1],"attributes":{"-1":{"name":"Shop"}}}}],
             "schemaVersion":1,"schemaFingerprint":"\(v1.fingerprint)"}
            """
        let request = try codec.decodeRequest(Array(body.utf8))
        #expect(request.changeSets.first?.entities.first?.entity == "lists")
        let version = try #require(codec.version(fingerprint: request.schemaFingerprint))
        let lifted = version.lift(request.changeSets)
        #expect(lifted.first?.entities.first?.entity == "boards")
        #expect(lifted.first?.entities.first?.records.first?.values == [.text("Shop")])
        // Without the older version, the same body is refused.
        #expect(throws: WireError.self) { try WireCodec(schema: v2).decodeRequest(Array(body.utf8)) }
    }

    /// Version 2 retires `tasks.title`: a version-2 device empties it and never sends or
    /// receives it; the server keeps it, and version-1 devices go on syncing it.
    @Test func aRetiredField_isKeptForOldDevices_andNeverReachesNewOnes() async throws {
        let folder = NSTemporaryDirectory() + "fm-retire-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let v1 = try Schema(Self.v1Entities)
        var entities = Self.v1Entities
        entities[1].fields[0].retired = true
        let v2 = try Schema(entities, version: 2)
        _ = try RevisionServer(.file(path: folder + "/server.sqlite"), schema: v1)
        let server = try RevisionServer(.file(path: folder + "/server.sqlite"), schema: v2)
        #expect(server.migrations.map(\.description) == ["retire field tasks.title"])
        let transport = InProcessTransport(server: server)
        let old = SyncClient(store: try Store(.memory, schema: v1, replica: ReplicaID(1)), transport: transport)
        let new = SyncClient(store: try Store(.memory, schema: v2, replica: ReplicaID(2)), transport: transport)

        try await old.write { store in
            let list = try store.insert("lists", values: [.text("Home")])
            _ = try store.insert("tasks", values: [.text("Milk"), .integer(list)])
        }
        _ = try await old.sync()
        _ = try await new.sync()
        #expect(try await new.read { try $0.record("tasks", id: 1)?.values } == [.null, .integer(1)])
        try await new.write { store in _ = try store.insert("tasks", values: [.null, .integer(1)]) }
        _ = try await new.sync()
        try await old.write { store in _ = try store.update("tasks", id: 1, ["title": "Oat milk"]) }
        _ = try await old.sync()
        _ = try await new.sync()
        #expect(try await new.read { try $0.record("tasks", id: 1)?.values } == [.null, .integer(1)])
        #expect(try await new.read { try $0.pendingChanges().isEmpty })
        #expect(try await old.read { try $0.record("tasks", id: 1)?.values } == [.text("Oat milk"), .integer(1)])
        #expect(try await old.read { try $0.record("tasks", id: 2)?.values } == [.null, .integer(1)])
        #expect(try await server.withSQLite { try $0.scalar("SELECT title FROM tasks WHERE id = 1") } == .text("Oat milk"))
        // The version-2 codec neither writes nor reads it.
        let codec = WireCodec(schema: v2)
        let body = #"{"maxRevision":0,"changeSets":[{"types":["tasks"],"tasks":{"create":[-1],"attributes":{"-1":{"title":"x","listID":1}}}}]}"#
        let error = #expect(throws: WireError.self) { try codec.decodeRequest(Array(body.utf8)) }
        #expect(error?.description.contains("retired") == true)
        let record = WireRecord(Record(entity: "tasks", id: 5, values: [.text("x"), .integer(1)], stamps: [Stamp(clock: 9, replica: ReplicaID(3)), Stamp(clock: 8, replica: ReplicaID(3))]))
        let encoded = String(decoding: codec.encode(SyncResponse(maxRevision: 1, changeSets: [ChangeSet(entities: [EntityChanges(entity: "lists"), EntityChanges(entity: "tasks", update: [5], records: [record])])])), as: UTF8.self)
        #expect(!encoded.contains("title"))
        #expect(!encoded.contains("\"*\""))  // the shared stamp stands for synced fields only
    }

    /// Version 2 changes `tasks.title` from text to a set of words through the app's
    /// conversion: the server's file and each store convert their values; a device still on
    /// version 1 cannot be answered in its schema any more and is refused until it upgrades.
    @Test func aConvertedField_convertsOnServerAndDevices_andStrandsNoChange() async throws {
        let folder = NSTemporaryDirectory() + "fm-convert-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let v1 = try Schema(Self.v1Entities)
        var entities = Self.v1Entities
        entities[1].fields[0] = Field("title", .textSet, strategy: .union, convertedFrom: { value in
            guard case .text(let text) = value else { return .null }
            return .textSet(TextSet(text.split(separator: " ").map(String.init)))
        })
        let v2 = try Schema(entities, version: 2)
        do {
            let transport = InProcessTransport(server: try RevisionServer(.file(path: folder + "/server.sqlite"), schema: v1))
            let a = SyncClient(store: try Store(.file(path: folder + "/a.sqlite"), schema: v1, replica: ReplicaID(1)), transport: transport)
            try await a.write { store in
                let list = try store.insert("lists", values: [.text("Home")])
                _ = try store.insert("tasks", values: [.text("Oat milk"), .integer(list)])
            }
            _ = try await a.sync()
            try await a.write { store in _ = try store.update("tasks", id: 1, ["title": "Oat milk 2l"]) }  // unsent
            try await a.withStore { $0.database.close() }
        }
        let server = try RevisionServer(.file(path: folder + "/server.sqlite"), schema: v2)
        #expect(server.migrations.map(\.description).first == "convert field tasks.title from text to textSet (the app's conversion)")
        #expect(server.olderSchemas.count == 1)  // kept, but its type no longer fits: not answered
        let transport = InProcessTransport(server: server)
        let stale = SyncClient(store: try Store(.memory, schema: v1), transport: transport)
        let error = try #require(await #expect(throws: SyncError.self) { try await stale.sync() })
        #expect((error.cause as? SyncRequestRejected)?.code == "incompatibleSchema")

        let b = SyncClient(store: try Store(.memory, schema: v2, replica: ReplicaID(2)), transport: transport)
        _ = try await b.sync()
        #expect(try await b.read { try $0.record("tasks", id: 1)?.values[0] } == .textSet(TextSet(["Oat", "milk"])))
        let a = SyncClient(store: try Store(.file(path: folder + "/a.sqlite"), schema: v2), transport: transport)
        _ = try await a.sync()
        _ = try await b.sync()
        for client in [a, b] {
            #expect(try await client.read { try $0.record("tasks", id: 1)?.values[0] } == .textSet(TextSet(["Oat", "milk", "2l"])))
        }
    }

    /// Version 2 adds a reference to an existing entity (tasks.ownerID -> lists, setNull):
    /// the server and the stores add the column with its index, and its delete rule holds.
    @Test func anAddedReference_worksOnServerAndDevices() async throws {
        let folder = NSTemporaryDirectory() + "fm-addref-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let v1 = try Schema(Self.v1Entities)
        var entities = Self.v1Entities
        entities[1].fields.append(Field("ownerID", .reference(to: "lists", onDelete: .setNull)))
        let v2 = try Schema(entities, version: 2)
        do {
            let transport = InProcessTransport(server: try RevisionServer(.file(path: folder + "/server.sqlite"), schema: v1))
            let a = SyncClient(store: try Store(.file(path: folder + "/a.sqlite"), schema: v1, replica: ReplicaID(1)), transport: transport)
            try await a.write { store in
                let home = try store.insert("lists", values: [.text("Home")])
                _ = try store.insert("lists", values: [.text("Ann")])
                _ = try store.insert("tasks", values: [.text("Milk"), .integer(home)])
            }
            _ = try await a.sync()
            try await a.withStore { $0.database.close() }
        }
        let server = try RevisionServer(.file(path: folder + "/server.sqlite"), schema: v2)
        #expect(server.migrations.map(\.description) == ["add field tasks.ownerID"])
        #expect(try server.database.scalar("SELECT count(*) FROM sqlite_master WHERE type = 'index' AND sql LIKE '%ownerID%'") == .integer(1))
        let transport = InProcessTransport(server: server)
        let a = SyncClient(store: try Store(.file(path: folder + "/a.sqlite"), schema: v2), transport: transport)
        #expect(try await a.read { try $0.database.scalar("SELECT count(*) FROM sqlite_master WHERE type = 'index' AND sql LIKE '%ownerID%'") } == .integer(1))
        let b = SyncClient(store: try Store(.memory, schema: v2, replica: ReplicaID(2)), transport: transport)
        try await a.write { store in _ = try store.update("tasks", id: 1, ["ownerID": .integer(2)]) }
        _ = try await a.sync()
        _ = try await b.sync()
        #expect(try await b.read { try $0.record("tasks", id: 1)?.values[2] } == .integer(2))
        try await b.write { store in try store.delete("lists", id: 2) }  // the owner goes: setNull
        _ = try await b.sync()
        _ = try await a.sync()
        for client in [a, b] {
            #expect(try await client.read { try $0.record("tasks", id: 1)?.values } == [.text("Milk"), .integer(1), .null])
        }
    }
}
