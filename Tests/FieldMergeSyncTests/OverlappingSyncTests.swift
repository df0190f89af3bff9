import FieldMerge
import FieldMergeProtocol
import FieldMergeSQLite
@testable import FieldMergeServer
import FieldMergeServerSQLite
@testable import FieldMergeSync
import Synchronization
import FieldMergeTestSupport
import Testing

/// Forwards requests after a pause, counting how many are inside at once.
final class SlowTransport: SyncTransport {
    let inner: InProcessTransport
    private let state: Mutex<(inside: Int, mostInside: Int, requests: Int, pause: Duration)>

    init(_ inner: InProcessTransport, pause: Duration = .milliseconds(40)) {
        self.inner = inner
        state = Mutex((0, 0, 0, pause))
    }

    /// How long each request waits before it is forwarded.
    var pause: Duration {
        get { state.withLock { $0.pause } }
        set { state.withLock { $0.pause = newValue } }
    }

    func send(_ body: [UInt8], gzip: Bool) async throws -> [UInt8] {
        state.withLock { state in
            state.inside += 1
            state.requests += 1
            state.mostInside = max(state.mostInside, state.inside)
        }
        defer { state.withLock { $0.inside -= 1 } }
        try await Task.sleep(for: state.withLock { $0.pause })
        return try await inner.send(body, gzip: gzip)
    }

    var requests: Int { state.withLock { $0.requests } }
    var mostInside: Int { state.withLock { $0.mostInside } }

    /// Waits until a request is inside the transport.
    func waitForARequest() async throws {
        while state.withLock({ $0.inside }) == 0 { try await Task.sleep(for: .milliseconds(2)) }
    }
}

@Suite struct OverlappingSyncTests {
    /// The titles of every list on the server, sorted.
    private func serverLists(_ transport: InProcessTransport) async throws -> [String] {
        try await transport.withServer { server in
            try server.database.rows("SELECT name FROM lists ORDER BY name").map { row in
                guard case .text(let name)? = row.first else { return "?" }
                return name
            }
        }
    }

    /// Two syncs called while the first is in flight, with inserts before, between and after
    /// the calls in every combination: no record reaches the server twice, and everything
    /// inserted before the last call returned is on the server when it returns.
    @Test(arguments: 0..<8)
    func overlappingCalls_neverCreateARecordTwice(_ combination: Int) async throws {
        let schema = try syncSchema()
        let server = InProcessTransport(server: try RevisionServer(.memory, schema: schema))
        let slow = SlowTransport(server)
        let client = SyncClient(store: try Store(.memory, schema: schema, replica: ReplicaID(7)), transport: slow)
        func insert(_ name: String) async throws {
            try await client.write { store in _ = try store.insert("lists", values: [.text(name)]) }
        }
        var expected: [String] = []
        if combination & 1 != 0 { try await insert("before"); expected.append("before") }
        let first = Task { try await client.sync() }
        try await slow.waitForARequest()
        if combination & 2 != 0 { try await insert("between"); expected.append("between") }
        let second = Task { try await client.sync() }
        try await Task.sleep(for: .milliseconds(5))
        if combination & 4 != 0 { try await insert("after"); expected.append("after") }
        let third = Task { try await client.sync() }
        _ = try await first.value
        _ = try await second.value
        _ = try await third.value
        #expect(slow.mostInside == 1, "two rounds were in flight at once")
        #expect(try await serverLists(server) == expected.sorted())
        #expect(try await client.read { try $0.pendingChanges() }.isEmpty)
    }

    @Test func aCallDuringASync_sendsWhatWasMadeBeforeIt() async throws {
        let schema = try syncSchema()
        let server = InProcessTransport(server: try RevisionServer(.memory, schema: schema))
        let slow = SlowTransport(server)
        let client = SyncClient(store: try Store(.memory, schema: schema, replica: ReplicaID(7)), transport: slow)
        let first = Task { try await client.sync() }
        try await slow.waitForARequest()
        try await client.write { store in _ = try store.insert("lists", values: ["Home"]) }
        let summary = try await client.sync()
        _ = try await first.value
        #expect(summary.sent == 1)
        #expect(try await serverLists(server) == ["Home"])
    }

    @Test func cancellingTheOnlyCaller_cancelsTheSync_andTheNextOneFinishesIt() async throws {
        let schema = try syncSchema()
        let server = InProcessTransport(server: try RevisionServer(.memory, schema: schema))
        let slow = SlowTransport(server, pause: .seconds(30))  // ends only by cancellation
        let client = SyncClient(store: try Store(.memory, schema: schema, replica: ReplicaID(7)), transport: slow)
        try await client.write { store in _ = try store.insert("lists", values: ["Home"]) }
        let cancelled = Task { try await client.sync() }
        try await slow.waitForARequest()
        cancelled.cancel()
        let failure = await #expect(throws: SyncError.self) { _ = try await cancelled.value }
        #expect(failure?.code == .cancelled && failure?.isRetryable == true)
        slow.pause = .zero
        _ = try await client.sync()
        #expect(try await serverLists(server) == ["Home"])
    }
}
