import FieldMerge
import FieldMergeProtocol
import FieldMergeSQLite
@testable import FieldMergeServer
import FieldMergeServerSQLite
@testable import FieldMergeSync
import FieldMergeTestSupport
import Foundation
import Testing

/// What the server stores when a device sends what it should not, on SQLite (the same
/// scenarios run on PostgreSQL in `PostgresHostileInputTests`), and what the device makes of it.
@Suite struct HostileInputTests {
    static var harness: HostileInputHarness {
        HostileInputHarness(
            makeServer: { schema, options, wall in try RevisionServer(.memory, schema: schema, options: options, wall: wall) },
            storedReplies: { server in
                guard case .integer(let count)? = try server.database.scalar("SELECT count(*) FROM __fm_replies") else { return -1 }
                return Int(count)
            })
    }

    @Test(arguments: HostileInputScenario.allCases)
    func scenario(_ scenario: HostileInputScenario) async throws {
        try await scenario.run(Self.harness)
    }

    /// A note whose title holds U+0000 (as a plain-SQL edit can make one) is kept aside on the
    /// device with the code `unstorable`; the other note of the same request is taken, and the
    /// next syncs succeed.
    @Test func aDeviceKeepsTheUnstorableRecordAsideAndSyncsTheRest() async throws {
        let schema = HostileInputScenario.schema
        let server = InProcessTransport(server: try RevisionServer(.memory, schema: schema))
        let client = SyncClient(store: try Store(.memory, schema: schema, replica: ReplicaID(7)), transport: server)
        try await client.write { store in
            _ = try store.insert("notes", values: [.text("fine"), .textSet([]), .real(1)])
            _ = try store.insert("notes", values: [.text("a\u{0}b"), .textSet([]), .real(2)])
        }
        let summary = try await client.sync()
        #expect(summary.refused.map(\.code) == [RevisionServer.unstorableCode])
        let unsynced = try await client.write { try $0.unsyncedChanges() }
        #expect(unsynced.map(\.id) == [-2])
        #expect(unsynced.first?.refusal?.code == "unstorable")
        #expect(await server.withServer { await $0.maxRevision } == 1)
        #expect(try await server.withServer { try $0.database.scalar("SELECT group_concat(title) FROM notes") } == .text("fine"))
        try await client.write { store in _ = try store.insert("notes", values: [.text("later"), .textSet([]), .real(3)]) }
        _ = try await client.sync()
        #expect(try await server.withServer { try $0.database.scalar("SELECT count(*) FROM notes") } == .integer(2))
    }

    /// The answer to a request is lost and its retry arrives altered (same request id, other
    /// change sets): 422 `idempotencyMismatch`. The device keeps the request in flight, since
    /// the server took one under that id, and the next honest retry is replayed: the list is
    /// created once.
    @Test func aRetryRefusedAsAMismatchStaysInFlightAndIsAnsweredLater() async throws {
        let schema = try syncSchema()
        let server = InProcessTransport(server: try RevisionServer(.memory, schema: schema))
        let transport = AlteringTransport(server)
        let client = SyncClient(store: try Store(.memory, schema: schema, replica: ReplicaID(1)), transport: transport, gzip: false)
        try await client.write { store in _ = try store.insert("lists", values: ["Home"]) }
        await transport.set(.loseAnswer)
        _ = await #expect(throws: SyncError.self) { _ = try await client.sync() }
        await transport.set(.alter)
        let error = await #expect(throws: SyncError.self) { _ = try await client.sync() }
        #expect(error?.code == .rejected && error?.isRetryable == false)
        let rejected = error?.cause as? SyncRequestRejected
        #expect(rejected?.status == 422 && rejected?.code == "idempotencyMismatch")
        #expect(try await client.withStore { try $0.inFlightRequest() } != nil)
        #expect(try await client.write { try $0.unsyncedChanges().map(\.id) } == [-1])
        await transport.set(.pass)
        _ = try await client.sync()
        #expect(try await server.withServer { try $0.database.scalar("SELECT count(*) FROM lists") } == .integer(1))
        #expect(try await client.withStore { try $0.inFlightRequest() } == nil)
        #expect(try await client.write { try $0.unsyncedChanges() }.isEmpty)
    }

    /// A file made before stored replies had an owner, a time and a digest opens: its reply
    /// is still replayed (without the digest check), and new replies get all three.
    @Test func aFileMadeBeforeReplyDigestsOpensAndReplays() async throws {
        let folder = NSTemporaryDirectory() + "fm-replies-\(UUID().uuidString)"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/server.sqlite"
        let schema = HostileInputScenario.schema
        let sent = SyncRequest(maxRevision: 0, changeSets: [ChangeSet(entities: [
            Send.create("notes", -1, [.text("kept"), .textSet([]), .real(1)]),
        ])], clientID: "c", requestID: "r")
        let first: SyncResponse
        do {
            let server = try RevisionServer(.file(path: path), schema: schema)
            first = try await server.handle(sent)
            // Back to the table as it was before: three columns, no indexes of pruning.
            try server.database.execute("""
                DROP INDEX "__fm_replies_stored"; DROP INDEX "__fm_replies_owner";
                ALTER TABLE "__fm_replies" DROP COLUMN "owner"; ALTER TABLE "__fm_replies" DROP COLUMN "stored";
                ALTER TABLE "__fm_replies" DROP COLUMN "digest"
                """)
        }
        let server = try RevisionServer(.file(path: path), schema: schema)
        let columns = try server.database.rows("SELECT name FROM pragma_table_info('__fm_replies') ORDER BY cid").map { $0.first }
        #expect(columns == [.text("client"), .text("request"), .text("response"), .text("owner"), .text("stored"), .text("digest")])
        #expect(try server.database.scalar("SELECT digest IS NULL AND stored > 1600000000000 FROM __fm_replies") == .integer(1))
        #expect(try await server.handle(sent) == first)
        // Without a digest even other change sets are replayed: the reply predates the check.
        var other = sent
        other.changeSets[0].entities[0].records[0].values[0] = .text("other")
        #expect(try await server.handle(other).changeSets == first.changeSets)
        #expect(await server.maxRevision == 1)
    }
}

/// Passes requests on, loses an answer after the server committed, or alters the body of a
/// request (its first "Home" becomes "Hxme") before passing it on.
actor AlteringTransport: SyncTransport {
    enum Mode { case pass, loseAnswer, alter }
    let inner: InProcessTransport
    var mode = Mode.pass
    init(_ inner: InProcessTransport) { self.inner = inner }
    func set(_ mode: Mode) { self.mode = mode }
    func send(_ body: [UInt8], gzip: Bool) async throws -> [UInt8] {
        switch mode {
        case .pass: return try await inner.send(body, gzip: gzip)
        case .loseAnswer:
            _ = try await inner.send(body, gzip: gzip)
            throw TransportError("connection reset after the server answered")
        case .alter:
            let altered = String(decoding: body, as: UTF8.self).replacingOccurrences(of: "\"Home\"", with: "\"Hxme\"")
            return try await inner.send(Array(altered.utf8), gzip: gzip)
        }
    }
}
