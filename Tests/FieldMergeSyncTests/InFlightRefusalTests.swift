import FieldMerge
import FieldMergeSQLite
@testable import FieldMergeSync
import FieldMergeProtocol
@testable import FieldMergeServer
import FieldMergeServerSQLite
import FieldMergeTestSupport
import Testing

/// A refusal of a retry says nothing of an earlier attempt whose answer was lost unless the
/// server read the retry's bytes (Specs/store.md, "A request in flight"; simulation.md §7,
/// bug 6).
@Suite struct InFlightRefusalTests {
    /// What the scripted transport does to each attempt, in order; then it passes requests on.
    enum Fault: Sendable {
        /// The server takes the request; its answer is lost.
        case loseAnswer
        /// One bit of the gzip trailer's CRC flips on the way: the server reads another body.
        case damage
        /// Refused before the server reads it, as an expired token is.
        case unauthenticated
    }

    actor ScriptedTransport: SyncTransport {
        let inner: InProcessTransport
        var script: [Fault]
        var refusals: [String] = []
        init(_ inner: InProcessTransport, _ script: [Fault]) { self.inner = inner; self.script = script }

        func send(_ body: [UInt8], gzip: Bool) async throws -> [UInt8] {
            guard !script.isEmpty else { return try await inner.send(body, gzip: gzip) }
            switch script.removeFirst() {
            case .loseAnswer:
                _ = try await inner.send(body, gzip: gzip)
                throw TransportError("connection reset after the server answered")
            case .damage:
                var damaged = body
                damaged[damaged.count - 6] ^= 0x01
                do { return try await inner.send(damaged, gzip: gzip) } catch let refusal as SyncRequestRejected {
                    refusals.append(refusal.code)
                    throw refusal
                }
            case .unauthenticated:
                throw SyncRequestRejected(status: 401, code: "unauthenticated", message: "the token expired")
            }
        }
    }

    private func setUp(_ script: [Fault]) throws -> (InProcessTransport, ScriptedTransport, SyncClient) {
        let schema = try syncSchema()
        let server = InProcessTransport(server: try RevisionServer(.memory, schema: schema))
        let scripted = ScriptedTransport(server, script)
        let client = SyncClient(store: try Store(.memory, schema: schema, replica: ReplicaID(1)), transport: scripted)
        return (server, scripted, client)
    }

    private func listNames(_ server: InProcessTransport) async throws -> [String] {
        try await server.withServer { server in
            try server.database.rows("SELECT name FROM lists ORDER BY name").map { row in
                if case .text(let name) = row[0] { return name }
                return "\(row[0])"
            }
        }
    }

    /// Bug 6: the answer to a create is lost, the user adds a list, the retry arrives
    /// damaged (400 gzipCorrupt). The request stays in flight, the sync fails as retryable,
    /// and the next sync replays the first answer: each list exists once.
    @Test func aLostAnswer_thenADamagedRetry_staysInFlight_andCreatesOnce() async throws {
        let (server, scripted, client) = try setUp([.loseAnswer, .damage])
        try await client.write { store in _ = try store.insert("lists", values: ["Home"]) }
        _ = await #expect(throws: SyncError.self) { _ = try await client.sync() }
        try await client.write { store in _ = try store.insert("lists", values: ["Work"]) }
        let failure = await #expect(throws: SyncError.self) { _ = try await client.sync() }
        #expect(failure?.code == .unreachable && failure?.isRetryable == true)
        #expect(await scripted.refusals == ["gzipCorrupt"])
        #expect(try await client.withStore { try $0.inFlightRequest() } != nil)
        _ = try await client.sync()
        #expect(try await listNames(server) == ["Home", "Work"])
        #expect(try await client.withStore { try $0.inFlightRequest() } == nil)
        #expect(try await client.read { try $0.pendingChanges().isEmpty })
        #expect(try await client.read { try $0.database.scalar("SELECT group_concat(id) FROM (SELECT id FROM lists ORDER BY id)") } == .text("1,2"))
    }

    /// The same with a token that expired before the retry: 401 is not an answer to the
    /// request, which stays in flight; the sync fails as rejected (the app must sign in).
    @Test func aLostAnswer_thenAnUnauthenticatedRetry_staysInFlight_andCreatesOnce() async throws {
        let (server, _, client) = try setUp([.loseAnswer, .unauthenticated])
        try await client.write { store in _ = try store.insert("lists", values: ["Home"]) }
        _ = await #expect(throws: SyncError.self) { _ = try await client.sync() }
        try await client.write { store in _ = try store.insert("lists", values: ["Work"]) }
        let failure = await #expect(throws: SyncError.self) { _ = try await client.sync() }
        #expect(failure?.code == .rejected && failure?.isRetryable == false)
        #expect(try await client.withStore { try $0.inFlightRequest() } != nil)
        _ = try await client.sync()
        #expect(try await listNames(server) == ["Home", "Work"])
    }

    /// Damaged on its first attempt: kept in flight too, and taken once when sent again.
    @Test func aDamagedFirstAttempt_isSentAgainUnchanged() async throws {
        let (server, _, client) = try setUp([.damage])
        try await client.write { store in _ = try store.insert("lists", values: ["Home"]) }
        let failure = await #expect(throws: SyncError.self) { _ = try await client.sync() }
        #expect(failure?.code == .unreachable)
        _ = try await client.sync()
        #expect(try await listNames(server) == ["Home"])
        #expect(await server.withServer { await $0.maxRevision } == 1)
    }

    @Test func whatARefusalSaysOfTheRequest() {
        func reading(_ status: Int, _ code: String) -> InFlightRefusal {
            InFlightRefusal(SyncRequestRejected(status: status, code: code, message: ""))
        }
        #expect(reading(400, "gzipCorrupt") == .damagedOnTheWay)
        #expect(reading(400, "malformedJSON") == .damagedOnTheWay)
        #expect(reading(400, "unknownField") == .damagedOnTheWay)
        #expect(reading(400, "badRequest") == .refused)
        #expect(reading(400, "unsupportedProtocolVersion") == .refused)
        #expect(reading(409, "incompatibleSchema") == .refused)
        #expect(reading(413, "tooLarge") == .refused)
        #expect(reading(413, "gzipTooLarge") == .refused)
        #expect(reading(415, "unsupportedEncoding") == .refused)
        #expect(reading(401, "unauthenticated") == .notRead)
        #expect(reading(403, "forbidden") == .notRead)
        #expect(reading(422, "idempotencyMismatch") == .idTaken)
        #expect(reading(422, "somethingElse") == .refused)
    }
}
