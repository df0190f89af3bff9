import FieldMerge
import FieldMergeProtocol
import FieldMergeSQLite
@testable import FieldMergeServer
import FieldMergeServerSQLite
@testable import FieldMergeSync
import Synchronization
import FieldMergeTestSupport
import Testing

@Suite struct ServerIdentityTests {
    private func createList(_ name: String, requestID: String? = "r1") -> SyncRequest {
        let values = ContiguousArray<Value>([.text(name)])
        return SyncRequest(
            maxRevision: 0,
            changeSets: [ChangeSet(entities: [EntityChanges(
                entity: "lists", create: [-1], records: [WireRecord(id: -1, present: FieldMask([0]), values: values)])])],
            clientID: "c1", requestID: requestID)
    }

    @Test func theAuthorizationHook_seesTheAuthenticatedIdentity() async throws {
        let seen = Mutex<[String]>([])
        var options = RevisionServer.Options()
        options.authorize = { change in
            seen.withLock { $0.append("\(change.identity?.user ?? "-") \(change.kind.rawValue) \(change.entity)#\(change.id)") }
            return change.identity?.roles.contains("editor") == true
        }
        let server = try RevisionServer(.memory, schema: try syncSchema(), options: options)
        let refused = try await server.handle(createList("Home"), identity: SyncIdentity(user: "ann", roles: ["viewer"]))
        #expect(refused.changeSets.last?.conflict == true)
        let accepted = try await server.handle(createList("Home", requestID: "r2"), identity: SyncIdentity(user: "bob", roles: ["editor"]))
        #expect(accepted.changeSets.last?.conflict == false)
        #expect(seen.withLock { $0 } == ["ann create lists#1", "bob create lists#1"])
    }

    /// A peer that sends another user's client and request id gets no replay of that user's
    /// answer: its request is applied as its own.
    @Test func storedReplies_belongToTheUser_notToTheClientID() async throws {
        let server = try RevisionServer(.memory, schema: try syncSchema())
        let ann = try await server.handle(createList("Ann's"), identity: SyncIdentity(user: "ann"))
        let replay = try await server.handle(createList("Ann's"), identity: SyncIdentity(user: "ann"))
        #expect(replay == ann)
        let mallory = try await server.handle(createList("Mallory's"), identity: SyncIdentity(user: "mallory"))
        #expect(mallory != ann)
        #expect(try server.database.rows("SELECT name FROM lists ORDER BY id") == [[.text("Ann's")], [.text("Mallory's")]])
    }

    /// User and client id are not run together ambiguously: user "ann/x" with client "y" and
    /// user "ann" with client "x/y" own two stored replies, not one.
    @Test func storedReplyKeys_doNotConfuseUserAndClientBoundaries() async throws {
        let server = try RevisionServer(.memory, schema: try syncSchema())
        var first = createList("One")
        first.clientID = "y"
        var second = createList("Two")
        second.clientID = "x/y"
        let one = try await server.handle(first, identity: SyncIdentity(user: "ann/x"))
        let two = try await server.handle(second, identity: SyncIdentity(user: "ann"))
        #expect(two != one)
        #expect(try server.database.rows("SELECT name FROM lists ORDER BY id") == [[.text("One")], [.text("Two")]])
    }

    @Test func anotherProtocolVersion_isRefusedAndChangesNothing() async throws {
        let server = try RevisionServer(.memory, schema: try syncSchema())
        var request = createList("Home")
        request.protocolVersion = WireProtocol.version + 1
        let error = await #expect(throws: ServerError.self) { try await server.handle(request) }
        #expect(error?.code == .unsupportedProtocolVersion)
        #expect(error?.isRetryable == false)
        #expect(try server.database.scalar("SELECT count(*) FROM lists") == .integer(0))
        request.protocolVersion = WireProtocol.version
        #expect(try await server.handle(request).changeSets.last?.conflict == false)
    }

    @Test func theClient_sendsItsProtocolVersion() async throws {
        let schema = try syncSchema()
        let recorder = RecordingTransport(InProcessTransport(server: try RevisionServer(.memory, schema: schema)), schema: schema)
        let client = SyncClient(store: try Store(.memory, schema: schema, replica: ReplicaID(4)), transport: recorder, gzip: false)
        try await client.write { store in _ = try store.insert("lists", values: ["Home"]) }
        _ = try await client.sync()
        #expect(recorder.versions == [WireProtocol.version])
    }

    /// The request id is the digest of the body: the same pending changes give the same id,
    /// and it stands in the body the server reads.
    @Test func theRequestID_isADigestOfTheBody() throws {
        let schema = try syncSchema()
        let codec = WireCodec(schema: schema)
        let request = createList("Home", requestID: nil)
        let (body, id) = codec.encode(request, requestIDPrefix: "7-")
        let again = codec.encode(request, requestIDPrefix: "7-")
        #expect(again.body == body && again.requestID == id)
        #expect(id.hasPrefix("7-") && id.count == 18)
        #expect(try codec.decodeRequest(body).requestID == id)
        let other = codec.encode(createList("Work", requestID: nil), requestIDPrefix: "7-")
        #expect(other.requestID != id)
    }
}

/// Forwards requests and notes the protocol version each one carried.
final class RecordingTransport: SyncTransport {
    let inner: InProcessTransport
    let codec: WireCodec
    private let seen = Mutex<[Int]>([])
    init(_ inner: InProcessTransport, schema: Schema) {
        self.inner = inner
        codec = WireCodec(schema: schema)
    }
    var versions: [Int] { seen.withLock { $0 } }
    func send(_ body: [UInt8], gzip: Bool) async throws -> [UInt8] {
        let request = try codec.decodeRequest(gzip ? Gzip.decompress(body, limit: 1 << 30) : body)
        seen.withLock { $0.append(request.protocolVersion ?? 0) }
        return try await inner.send(body, gzip: gzip)
    }
}

@Suite struct StoredReplyTests {
    /// A request that also catches up on many records stores only its answers; its replay
    /// still carries the catch-up, read again.
    @Test func theStoredReply_keepsOnlyTheAnswers_andAReplayReadsTheCatchUpAgain() async throws {
        let schema = try syncSchema()
        let server = try RevisionServer(.memory, schema: schema)
        let many = (1...500).map { WireRecord(id: -Int64($0), present: FieldMask([0]), values: [.text("List \($0) with a long name")]) }
        _ = try await server.handle(SyncRequest(
            maxRevision: 0, changeSets: [ChangeSet(entities: [EntityChanges(entity: "lists", create: many.map(\.id), records: many)])]))
        let mine = SyncRequest(
            maxRevision: 0,
            changeSets: [ChangeSet(entities: [EntityChanges(
                entity: "lists", create: [-1], records: [WireRecord(id: -1, present: FieldMask([0]), values: ["Mine"])])])],
            clientID: "c", requestID: "r")
        let first = try await server.handle(mine)
        #expect(first.changeSets.first?.entities.first?.records.count == 500)
        let stored = try #require(try server.database.scalar("SELECT length(response) FROM __fm_replies") )
        guard case .integer(let size) = stored else { Issue.record("no stored reply"); return }
        #expect(size < 1_000, "the stored reply holds the 500 caught-up records: \(size) bytes")
        let replay = try await server.handle(mine)
        #expect(replay == first)
        #expect(try server.database.scalar("SELECT count(*) FROM lists") == .integer(501))
    }
}
