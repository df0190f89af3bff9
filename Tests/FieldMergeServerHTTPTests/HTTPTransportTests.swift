import FieldMerge
import FieldMergeSQLite
import FieldMergeServerHTTP
import FieldMergeSync
import FieldMergeProtocol
import FieldMergeServer
import FieldMergeServerSQLite
import FieldMergeSyncHTTP
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Testing

/// What ``HTTPTransport`` makes of the server's answers and of no server at all.
@Suite struct HTTPTransportTests {
    @Test func refusedBody_throwsRejectionWithStatusAndServerMessage() async throws {
        try await withHTTPServer(try RevisionServer(.memory, schema: httpTestSchema())) { running in
            let transport = HTTPTransport(url: running.syncURL)
            do {
                _ = try await transport.send(Array(#"{"maxRevision": "zero"}"#.utf8), gzip: false)
                Issue.record("a malformed body was accepted")
            } catch let rejected as SyncRequestRejected {
                #expect(rejected.status == 400)
                #expect(rejected.code == "unexpectedType")
                #expect(rejected.message.contains("maxRevision") || rejected.message.contains("byte"))
            }
        }
    }

    @Test func oversizedBody_throwsRejection413() async throws {
        try await withHTTPServer(try RevisionServer(.memory, schema: httpTestSchema()), configuration: .init(maxRequestBytes: 64)) { running in
            let transport = HTTPTransport(url: running.syncURL)
            let body = Array(#"{"maxRevision":0,"changeSets":[]}"#.utf8) + [UInt8](repeating: 0x20, count: 100)
            do {
                _ = try await transport.send(body, gzip: false)
                Issue.record("a body over the limit was accepted")
            } catch let rejected as SyncRequestRejected {
                #expect(rejected.status == 413 && rejected.code == "tooLarge")
            }
        }
    }

    @Test func responseOverTheClientsLimit_isRefused() async throws {
        try await withHTTPServer(try RevisionServer(.memory, schema: httpTestSchema())) { running in
            let transport = HTTPTransport(url: running.syncURL, configuration: .init(maxResponseBytes: 16))
            do {
                _ = try await transport.send(Array(#"{"maxRevision":0,"changeSets":[]}"#.utf8), gzip: false)
                Issue.record("a response over the limit was taken")
            } catch let rejected as SyncRequestRejected {
                #expect(rejected.code == "tooLarge" && rejected.message.contains("limit of 16 bytes"))
            }
        }
    }

    /// A gzip'd answer that URLSession inflates past the limit is stopped while it arrives:
    /// the transport never holds the whole inflated body.
    @Test func aGzipdResponseInflatingPastTheLimit_isStoppedEarly() async throws {
        let schema = try httpTestSchema()
        let server = try RevisionServer(.memory, schema: schema)
        var changes = EntityChanges(entity: "lists")
        for id in 1...5_000 as ClosedRange<Int64> {
            changes.create.append(-id)
            changes.records.append(WireRecord(Record(schema.entity("lists")!, id: -id, values: [.text(String(repeating: "x", count: 200))],
                                                     stamp: Stamp(milliseconds: 1, replica: ReplicaID(1)))))
        }
        _ = try await server.handle(SyncRequest(maxRevision: 0, changeSets: [ChangeSet(entities: [changes])]))
        try await withHTTPServer(server) { running in
            let query = Gzip.compress(Array(#"{"maxRevision":0,"changeSets":[]}"#.utf8))
            let whole = try await HTTPTransport(url: running.syncURL).send(query, gzip: true)
            #expect(whole.count > 1_000_000)  // inflated by URLSession
            let limit = 100_000
            let transport = HTTPTransport(url: running.syncURL, configuration: .init(maxResponseBytes: limit))
            do {
                _ = try await transport.send(query, gzip: true)
                Issue.record("a response over the limit was taken")
            } catch let rejected as SyncRequestRejected {
                #expect(rejected.code == "tooLarge" && rejected.message.contains("the download was stopped"))
                let received = rejected.message.split(separator: "(").last.flatMap { Int($0.split(separator: " ")[0]) }
                let stoppedAt = try #require(received, "\(rejected.message)")
                #expect(stoppedAt > limit && stoppedAt < whole.count / 2)
            }
        }
    }

    @Test func wrongPath_throwsRejection404() async throws {
        try await withHTTPServer(try RevisionServer(.memory, schema: httpTestSchema())) { running in
            let transport = HTTPTransport(url: running.url("/not-sync"))
            do {
                _ = try await transport.send(Array(#"{"maxRevision":0,"changeSets":[]}"#.utf8), gzip: false)
                Issue.record("a request to a wrong path succeeded")
            } catch let rejected as SyncRequestRejected {
                #expect(rejected.status == 404 && rejected.code == "notFound")
            }
        }
    }

    @Test func noServerListening_throwsRetryableTransportError() async throws {
        try await Self.withClosedPort { port in
            let transport = HTTPTransport(url: URL(string: "http://127.0.0.1:\(port)/sync")!, configuration: .init(requestTimeout: 10))
            await #expect(throws: TransportError.self) {
                try await transport.send(Array(#"{"maxRevision":0,"changeSets":[]}"#.utf8), gzip: false)
            }
        }
    }

    @Test func serverUnreachable_syncThrowsTransportError_andTheStoreKeepsItsChanges() async throws {
        let schema = try httpTestSchema()
        try await Self.withClosedPort { port in
            let store = try Store(.memory, schema: schema, replica: ReplicaID(7))
            let offline = SyncClient(store: store, transport: HTTPTransport(url: URL(string: "http://127.0.0.1:\(port)/sync")!))
            _ = try await offline.withStore { try $0.insert("lists", values: ["Home"]) }
            let failure = await #expect(throws: SyncError.self) { _ = try await offline.sync() }
            #expect(failure?.code == .unreachable && failure?.isRetryable == true && failure?.cause is TransportError)
            #expect(try await offline.withStore { try $0.pendingChanges().count } == 1)
            #expect(await offline.withStore { $0.maxRevision } == 0)
        }
    }

    /// Runs `body` with a port on 127.0.0.1 that nobody listens on: bound and not listening
    /// for as long as `body` runs, so a connection to it is refused and no server of a test
    /// beside it can take it meanwhile (one released before the body could be).
    static func withClosedPort<T>(_ body: (Int) async throws -> T) async throws -> T {
        let socket = Glibc.socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        defer { close(socket) }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(socket, pointer, length) == 0 && getsockname(socket, pointer, &length) == 0
            }
        }
        guard bound else { throw RawHTTP.Failure(description: "bind: errno \(errno)") }
        return try await body(Int(UInt16(bigEndian: address.sin_port)))
    }
}
