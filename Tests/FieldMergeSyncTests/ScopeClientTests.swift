import FieldMerge
import FieldMergeProtocol
import FieldMergeSQLite
@testable import FieldMergeSync
import FieldMergeTestSupport
import Foundation
import Synchronization
import Testing

/// The device's side of scoped sync (Specs/store.md, "Leaving a scope") against a scripted
/// server: holdings sent back, leaves applied, unsynced changes kept aside and never sent.
@Suite struct ScopeClientTests {
    typealias S = Scripted

    @Test func theHoldingsAreSentBackWithEveryRequest_andKeptAcrossReopeningTheStore() async throws {
        let path = NSTemporaryDirectory() + "fieldmerge-scopes-\(UUID().uuidString).sqlite"
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) } }
        let transport = ScriptedTransport(schema: try syncSchema()) { request in
            request.maxRevision == 0 ? S.seed(scopes: S.holdings(1, 2)) : S.nothingNew(request)
        }
        let open = { try Store(.file(path: path), schema: syncSchema(), replica: ReplicaID(7)) }
        var client = SyncClient(store: try open(), transport: transport)
        _ = try await client.sync()
        _ = try await client.sync()
        await client.close()
        client = SyncClient(store: try open(), transport: transport)
        _ = try await client.sync()
        await client.close()
        #expect(transport.requests.map(\.scopes) == [nil, S.holdings(1, 2), S.holdings(1, 2)])
        #expect(transport.requests.map(\.maxRevision) == [0, 1, 1])
    }

    @Test func aResponseWithoutHoldings_clearsThem() async throws {
        let transport = ScriptedTransport(schema: try syncSchema()) { request in
            request.maxRevision == 0 ? S.seed(scopes: S.holdings(1)) : SyncResponse(maxRevision: 1, changeSets: [])
        }
        let client = try S.client(transport)
        for _ in 0..<3 { _ = try await client.sync() }
        #expect(transport.requests.map(\.scopes) == [nil, S.holdings(1), nil])
        #expect(await client.withStore { $0.scopeState } == nil)
    }

    @Test func anEditMadeWhileItsRecordLeaves_isKeptAside_andNothingIsSentForIt() async throws {
        let holder = WeakClient()
        let transport = ScriptedTransport(schema: try syncSchema()) { request in
            switch request.maxRevision {
            case 0: return S.seed(scopes: S.holdings(1, 2))
            case 1:
                // While the request is on its way, the app edits a task of list 1 and adds one.
                _ = try await holder.client?.write { store in
                    _ = try store.update("tasks", id: 1, ["title": "Oat milk"])
                    return try store.insert("tasks", values: ["Bread", false, 0, .integer(1)])
                }
                return SyncResponse(maxRevision: 2, changeSets: [S.leaving(lists: [1], tasks: [1])], scopes: S.holdings(2))
            default: return S.nothingNew(request)
            }
        }
        let client = try S.client(transport)
        holder.set(client)
        let feed = Mutex<[StoreChange]>([])
        await client.addObserver { change in feed.withLock { $0.append(change) } }
        _ = try await client.sync()
        _ = try await client.sync()
        #expect(try await S.ids(client, "lists") == [2])
        #expect(try await S.ids(client, "tasks") == [2])
        let (kept, unsynced, outbox) = try await client.withStore { store in
            (try store.keptAside(), try store.unsyncedChanges(), try store.outboxCount())
        }
        #expect(kept.map { "\($0.entity)#\($0.id) \($0.kind)" } == ["tasks#-1 create", "tasks#1 update"])
        #expect(unsynced.count == 2 && unsynced.allSatisfy { $0.refusal?.code == "outOfScope" })
        #expect(outbox == 0)
        #expect(feed.withLock { $0.contains { $0.left == ["lists": [1], "tasks": [-1, 1]] } })
        _ = try await client.sync()
        #expect(transport.requests.count == 3)
        #expect(transport.requests.allSatisfy { $0.changeSets.isEmpty })
        #expect(transport.requests.last?.scopes == S.holdings(2))
    }

    @Test func aChangeRefusedAsItsRecordLeaves_isKeptAsideAsOutOfScope() async throws {
        let transport = ScriptedTransport(schema: try syncSchema()) { request in
            guard request.maxRevision == 1, let sent = request.changeSets.first else {
                return request.maxRevision == 0 ? S.seed(scopes: S.holdings(1, 2)) : S.nothingNew(request)
            }
            let refused = ChangeSet(entities: [], conflict: true, refused: sent.entities.flatMap { changes in
                changes.records.map { RefusedRecord(entity: changes.entity, id: $0.id, code: "unauthorized", message: "out of scope") }
            })
            return SyncResponse(maxRevision: 2, changeSets: [S.leaving(lists: [1], tasks: [1]), refused], scopes: S.holdings(2))
        }
        let client = try S.client(transport)
        _ = try await client.sync()
        _ = try await client.write { try $0.update("tasks", id: 1, ["title": "Oat milk"]) }
        _ = try await client.sync()
        _ = try await client.sync()
        #expect(transport.requests.map { $0.changeSets.count } == [0, 1, 0])
        let unsynced = try await client.withStore { try $0.unsyncedChanges() }
        #expect(unsynced.map { "\($0.entity)#\($0.id) \($0.kind) \($0.refusal?.code ?? "-")" } == ["tasks#1 update outOfScope"])
        #expect(try await client.withStore { try $0.pendingChanges(includingParked: true).isEmpty })
    }

    @Test func aLeaveOfARecordTheDeviceNeverHad_isHarmless() async throws {
        let transport = ScriptedTransport(schema: try syncSchema()) { request in
            request.maxRevision == 0 ? S.seed(scopes: S.holdings(1, 2))
                : SyncResponse(maxRevision: 2, changeSets: [S.leaving(lists: [99], tasks: [7])], scopes: S.holdings(1, 2))
        }
        let client = try S.client(transport)
        _ = try await client.sync()
        _ = try await client.sync()
        #expect(try await S.ids(client, "lists") == [1, 2])
        #expect(try await S.ids(client, "tasks") == [1, 2])
        #expect(await client.withStore { $0.maxRevision } == 2)
        #expect(try await client.withStore { try $0.keptAside().isEmpty })
    }

    struct Crash: Error {}

    @Test func aFailureWhileApplying_rollsBackTheLeaveAndTheHoldingsTogether() async throws {
        let transport = ScriptedTransport(schema: try syncSchema()) { request in
            switch request.maxRevision {
            case 0: return S.seed(scopes: S.holdings(1, 2))
            case 1: return SyncResponse(maxRevision: 2, changeSets: [S.leaving(lists: [1], tasks: [1])], scopes: S.holdings(2))
            default: return S.nothingNew(request)
            }
        }
        let client = try S.client(transport)
        _ = try await client.sync()
        // A refused edit of task 1 waits aside (and is not sent), so the next request is catch-up only.
        try await client.write { store in
            _ = try store.update("tasks", id: 1, ["title": "Oat milk"])
            try store.park("tasks", id: 1, code: "unauthorized", message: "no")
        }
        await client.setApplyHook { stage in if stage == .written { throw Crash() } }
        await #expect(throws: SyncError.self) { _ = try await client.sync() }
        let (state, revision, kept, code) = try await client.withStore { store in
            (store.scopeState, store.maxRevision, try store.keptAside().count, try store.unsyncedChanges().first?.refusal?.code)
        }
        #expect(state == S.holdings(1, 2).storedText && revision == 1 && kept == 0 && code == "unauthorized")
        #expect(try await S.ids(client, "lists") == [1, 2])
        await client.setApplyHook(nil)
        _ = try await client.sync()
        _ = try await client.sync()
        #expect(transport.requests.map(\.scopes) == [nil, S.holdings(1, 2), S.holdings(1, 2), S.holdings(2)])
        #expect(transport.requests.map(\.maxRevision) == [0, 1, 1, 2])
        #expect(try await client.withStore { try $0.unsyncedChanges().map { $0.refusal?.code } } == ["outOfScope"])
    }

    @Test func aRequestInFlight_isSentAgainWithTheHoldingsItCarried() async throws {
        let lost = Mutex(false)
        let transport = ScriptedTransport(schema: try syncSchema()) { request in
            guard let sent = request.changeSets.first?.entities.first else {
                return request.maxRevision == 0 ? S.seed(scopes: S.holdings(1)) : S.nothingNew(request)
            }
            if lost.withLock({ seen in defer { seen = true }; return !seen }) { throw TransportError("the answer was lost") }
            let record = S.list(3, "Garden", revision: 2)
            let confirmed = WireRecord(id: 3, present: record.present, values: record.values, stamps: record.stamps, revision: 2, oldID: sent.create[0])
            return SyncResponse(maxRevision: 2, changeSets: [ChangeSet(entities: [EntityChanges(entity: "lists", create: [3], records: [confirmed])], conflict: false)], scopes: S.holdings(1, 3))
        }
        let client = try S.client(transport)
        _ = try await client.sync()
        _ = try await client.write { try $0.insert("lists", values: ["Garden"]) }
        await #expect(throws: SyncError.self) { _ = try await client.sync() }
        _ = try await client.sync()
        // The lost request again, byte for byte, then catch-up with what its answer gave.
        #expect(transport.requests.count == 4)
        #expect(transport.bodies[1] == transport.bodies[2])
        #expect(transport.requests.map(\.scopes) == [nil, S.holdings(1), S.holdings(1), S.holdings(1, 3)])
        #expect(await client.withStore { $0.scopeState } == S.holdings(1, 3).storedText)
    }
}
