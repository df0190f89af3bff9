import FieldMerge
import FieldMergeProtocol
import FieldMergeSQLite
@testable import FieldMergeSync
import FieldMergeTestSupport
import Synchronization

/// A server written as a script: each request is decoded and kept, and answered with the
/// response the script builds for it (encoded by a `WireCodec`, as a server would).
final class ScriptedTransport: SyncTransport {
    typealias Script = @Sendable (SyncRequest) async throws -> SyncResponse
    let codec: WireCodec
    private let script: Script
    private let received = Mutex<[(request: SyncRequest, body: [UInt8])]>([])

    init(schema: Schema, script: @escaping Script) {
        codec = WireCodec(schema: schema)
        self.script = script
    }

    /// Every request received, in order.
    var requests: [SyncRequest] { received.withLock { $0.map(\.request) } }
    /// The bytes of every request received, in order.
    var bodies: [[UInt8]] { received.withLock { $0.map(\.body) } }

    func send(_ body: [UInt8], gzip: Bool) async throws -> [UInt8] {
        let request = try codec.decodeRequest(gzip ? Gzip.decompress(body, limit: 1 << 30) : body)
        received.withLock { $0.append((request, body)) }
        return codec.encode(try await script(request))
    }
}

/// Records and change sets of lists and tasks (`syncSchema()`) as a server sends them.
enum Scripted {
    static let stamp = Stamp(milliseconds: 900_000, replica: ReplicaID(99))

    static func list(_ id: Int64, _ name: String, revision: Int64) -> WireRecord {
        WireRecord(Record(entity: "lists", id: id, values: [.text(name)], stamps: [stamp]), revision: revision)
    }

    static func task(_ id: Int64, _ title: String, list: Int64, revision: Int64) -> WireRecord {
        WireRecord(Record(entity: "tasks", id: id, values: [.text(title), false, 0, .integer(list)],
                          stamps: ContiguousArray(repeating: stamp, count: 4)), revision: revision)
    }

    /// A catch-up change set creating `lists` and `tasks`.
    static func created(lists: [WireRecord] = [], tasks: [WireRecord] = []) -> ChangeSet {
        ChangeSet(entities: [
            EntityChanges(entity: "lists", create: lists.map(\.id), records: lists),
            EntityChanges(entity: "tasks", create: tasks.map(\.id), records: tasks),
        ].filter { !$0.records.isEmpty })
    }

    /// A catch-up change set of records that left what the device may hold.
    static func leaving(lists: [Int64] = [], tasks: [Int64] = []) -> ChangeSet {
        ChangeSet(entities: [EntityChanges(entity: "lists", leave: lists), EntityChanges(entity: "tasks", leave: tasks)]
            .filter { !$0.leave.isEmpty })
    }

    /// The first catch-up: lists 1 and 2, task 1 in list 1 and task 2 in list 2, at revision 1.
    static func seed(scopes: ScopeHoldings?) -> SyncResponse {
        SyncResponse(maxRevision: 1, changeSets: [created(
            lists: [list(1, "Home", revision: 1), list(2, "Work", revision: 1)],
            tasks: [task(1, "Milk", list: 1, revision: 1), task(2, "Mail", list: 2, revision: 1)])], scopes: scopes)
    }

    /// Nothing new: the revision and the holdings the request was sent with.
    static func nothingNew(_ request: SyncRequest) -> SyncResponse {
        SyncResponse(maxRevision: request.maxRevision, changeSets: [], scopes: request.scopes)
    }

    static func holdings(_ roots: Int64...) -> ScopeHoldings { ScopeHoldings(["project": .ids(roots)]) }

    static func ids(_ client: SyncClient, _ table: String) async throws -> [Int64] {
        try await client.withStore { store in
            try store.database.rows("SELECT id FROM \(table) ORDER BY id").map { row -> Int64 in
                if case .integer(let id) = row[0] { return id }
                return 0
            }
        }
    }

    /// A client of an empty store in memory.
    static func client(_ transport: ScriptedTransport) throws -> SyncClient {
        let store = try Store(.memory, schema: syncSchema(), replica: ReplicaID(7), wall: ManualWallClock(milliseconds: 1_000_000))
        return SyncClient(store: store, transport: transport)
    }
}

/// Holds a client weakly, for a script that edits through it (a strong reference would be a
/// cycle: client → transport → script → client).
final class WeakClient: Sendable {
    private let box = Mutex<WeakBox>(WeakBox())
    private struct WeakBox { weak var client: SyncClient? }
    var client: SyncClient? { box.withLock { $0.client } }
    func set(_ client: SyncClient) { box.withLock { $0.client = client } }
}
