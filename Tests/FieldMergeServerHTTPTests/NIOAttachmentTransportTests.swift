import FieldMerge
import FieldMergeFiles
import FieldMergeProtocol
import FieldMergeSQLite
import FieldMergeServer
import FieldMergeServerAuth
import FieldMergeServerHTTP
import FieldMergeServerSQLite
@testable import FieldMergeSync
import FieldMergeSyncHTTP
import FieldMergeSyncNIO
import FieldMergeTestSupport
import Foundation
#if canImport(Glibc)
import Glibc
#endif
import Synchronization
import Testing

/// ``NIOAttachmentTransport`` against a real `SyncHTTPServer`: the same wire and errors as
/// `HTTPTransport`'s attachments (AttachmentHTTPClientTests), one streamed request each.
@Suite struct NIOAttachmentTransportTests {
    /// Small chunks, so that even these small files go in several.
    static func transport(_ running: RunningServer, token: HTTPTransport.TokenProvider? = nil) throws -> NIOAttachmentTransport {
        try NIOAttachmentTransport(url: running.syncURL, token: token, chunkBytes: 16 << 10)
    }

    static func device(_ replica: UInt64, _ running: RunningServer) throws -> (SyncClient, NIOAttachmentTransport) {
        let transport = try transport(running)
        return (SyncClient(store: try Store(.memory, schema: AttachmentTestServer.schema(), replica: ReplicaID(replica)), transport: transport), transport)
    }

    /// A file of `bytes` in a new temporary directory, removed after `body`.
    static func withFile<T>(_ bytes: [UInt8], _ body: (String) async throws -> T) async throws -> T {
        let directory = try AttachmentFiles.makeTemporaryDirectory(prefix: "nio-attachment-")
        defer { AttachmentFiles.removeTree(directory) }
        let path = directory + "/file.bin"
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        return try await body(path)
    }

    @Test func aPhotoGoesUpInOneRequest_andComesDownOnAnotherDevice() async throws {
        try await AttachmentTestServer.run { running, bytesStore in
            let (a, _) = try Self.device(1, running)
            let (b, _) = try Self.device(2, running)
            let bytes = AttachmentTestServer.random(300_000)
            let uploads = Mutex<[Int64]>([])
            await a.setAttachmentProgress { event in uploads.withLock { $0.append(event.bytes) } }
            let reference = try await a.write { store in
                let id = try store.untyped.insert("photos", values: ["beach", .null])
                return try store.attach(bytes, mediaType: "image/jpeg", to: "photos", id: id, field: "image")
            }
            let sent = try await a.sync()
            #expect(sent.refused.isEmpty && sent.attachmentsUploaded == 1 && sent.attachmentBytesUploaded == 300_000)
            #expect(try await bytesStore.held(reference.sha256) == .complete(size: 300_000))
            // Chunks of 16 KiB as they go, then the whole once the server answered.
            let seen = uploads.withLock { $0 }
            #expect(seen.count > 2 && seen == seen.sorted() && seen.last == 300_000, "\(seen)")

            let downloads = Mutex<[Int64]>([])
            await b.setAttachmentProgress { event in downloads.withLock { $0.append(event.bytes) } }
            _ = try await b.sync()
            let path = try await b.attachment(reference)
            #expect(try AttachmentFiles.hash(path).sha256 == reference.sha256)
            #expect(try await b.attachmentBytes(reference) == bytes)
            let got = downloads.withLock { $0 }
            #expect(got.last == 300_000 && got == got.sorted(), "\(got)")
        }
    }

    @Test func anEmptyFile_goesUpAndComesDown() async throws {
        try await AttachmentTestServer.run(checkReferences: false) { running, bytesStore in
            let transport = try Self.transport(running)
            let hash = AttachmentTestServer.hash([])
            let held = try await Self.withFile([]) { path in
                try await transport.uploadAttachment(hash, size: 0, from: path, offset: 0, progress: nil)
            }
            #expect(held == .complete(size: 0))
            #expect(try await bytesStore.held(hash) == .complete(size: 0))
        }
    }

    @Test func aDownloadThatStopped_resumesWithARange() async throws {
        try await AttachmentTestServer.run { running, _ in
            let (a, _) = try Self.device(1, running)
            let (b, _) = try Self.device(2, running)
            let (reference, bytes, progress) = try await AttachmentHTTPClientTests.stoppedDownload(200_000, arrived: 50_000, from: a, to: b)
            #expect(try await b.attachmentBytes(reference) == bytes)
            #expect(progress.seen.last == 200_000)
            #expect(progress.seen.allSatisfy { $0 > 50_000 })
        }
    }

    @Test func anUploadThatStopped_resumesAtWhatTheServerHolds() async throws {
        try await AttachmentTestServer.run { running, bytesStore in
            let (a, transport) = try Self.device(1, running)
            let bytes = AttachmentTestServer.random(150_000)
            let reference = try await a.write { store in
                let id = try store.untyped.insert("photos", values: ["x", .null])
                return try store.attach(bytes, mediaType: "image/jpeg", to: "photos", id: id, field: "image")
            }
            let upload = try await bytesStore.upload(reference.sha256, at: 0)
            try await upload.append(Array(bytes[..<70_000]))
            await upload.close()
            #expect(try await transport.attachmentHeld(reference.sha256) == .partial(bytes: 70_000))
            let uploads = Mutex<[Int64]>([])
            await a.setAttachmentProgress { event in uploads.withLock { $0.append(event.bytes) } }
            let summary = try await a.sync()
            #expect(summary.refused.isEmpty && summary.attachmentBytesUploaded == 80_000)
            // From what the server held: nothing at or below 70,000 is reported.
            let seen = uploads.withLock { $0 }
            #expect(seen.allSatisfy { $0 > 70_000 } && seen.last == 150_000, "\(seen)")
            #expect(try await transport.attachmentHeld(reference.sha256) == .complete(size: 150_000))
            #expect(try await bytesStore.held(reference.sha256) == .complete(size: 150_000))
        }
    }

    @Test func bytesThatDoNotHaveTheHash_areRefused422_andDiscarded() async throws {
        try await AttachmentTestServer.run(checkReferences: false) { running, bytesStore in
            let transport = try Self.transport(running)
            let bytes = AttachmentTestServer.random(100_000)
            let other = AttachmentTestServer.hash(AttachmentTestServer.random(100_000))
            let error = await #expect(throws: SyncRequestRejected.self) {
                try await Self.withFile(bytes) { path in
                    try await transport.uploadAttachment(other, size: 100_000, from: path, offset: 0, progress: nil)
                }
            }
            #expect(error?.status == 422 && error?.code == "hashMismatch", "\(String(describing: error))")
            #expect(try await bytesStore.held(other) == .absent)
            #expect(try await transport.attachmentHeld(other) == .absent)
        }
    }

    @Test func aDownloadNoRecordGrants_isRefused403_andWritesNothing() async throws {
        try await AttachmentTestServer.run(checkReferences: false) { running, _ in
            let transport = try Self.transport(running)
            let bytes = AttachmentTestServer.random(20_000)
            let hash = AttachmentTestServer.hash(bytes)
            try await Self.withFile(bytes) { path in
                #expect(try await transport.uploadAttachment(hash, size: 20_000, from: path, offset: 0, progress: nil) == .complete(size: 20_000))
                let target = path + ".down"
                let error = await #expect(throws: SyncRequestRejected.self) {
                    try await transport.downloadAttachment(hash, range: nil, to: target, progress: nil)
                }
                #expect(error?.status == 403 && error?.code == "forbidden", "\(String(describing: error))")
                #expect(try AttachmentFiles.size(of: target) ?? 0 == 0)
                // Once a record references it, the same call brings every byte.
                try await AttachmentTestServer.reference(bytes, in: running)
                try await transport.downloadAttachment(hash, range: nil, to: target, progress: nil)
                #expect(try Array(Data(contentsOf: URL(fileURLWithPath: target))) == bytes)
            }
        }
    }

    @Test func aRangePastTheEnd_isRefused416() async throws {
        try await AttachmentTestServer.run { running, _ in
            let transport = try Self.transport(running)
            let bytes = AttachmentTestServer.random(1_000)
            let hash = AttachmentTestServer.hash(bytes)
            try await Self.withFile(bytes) { path in
                _ = try await transport.uploadAttachment(hash, size: 1_000, from: path, offset: 0, progress: nil)
                try await AttachmentTestServer.reference(bytes, in: running)
                let target = path + ".down"
                let error = await #expect(throws: SyncRequestRejected.self) {
                    try await transport.downloadAttachment(hash, range: 2_000..<3_000, to: target, progress: nil)
                }
                #expect(error?.status == 416 && error?.code == "rangeNotSatisfiable", "\(String(describing: error))")
                // A range inside comes back as those bytes, appended.
                try await transport.downloadAttachment(hash, range: 100..<600, to: target, progress: nil)
                #expect(try Array(Data(contentsOf: URL(fileURLWithPath: target))) == Array(bytes[100..<600]))
            }
        }
    }

    @Test func eachPieceHandedOn_isWhatWentIntoTheFile_inOrder() async throws {
        try await AttachmentTestServer.run { running, _ in
            let transport = try Self.transport(running)
            let bytes = AttachmentTestServer.random(700_000)
            let hash = AttachmentTestServer.hash(bytes)
            try await Self.withFile(bytes) { path in
                _ = try await transport.uploadAttachment(hash, size: 700_000, from: path, offset: 0, progress: nil)
                try await AttachmentTestServer.reference(bytes, in: running)
                // A resumed download: the first 1,000 bytes are in the file already.
                let target = path + ".down"
                try Data(bytes[..<1_000]).write(to: URL(fileURLWithPath: target))
                let pieces = Mutex<[[UInt8]]>([])
                let reports = Mutex<[Int64]>([])
                try await transport.downloadAttachment(
                    hash, range: 1_000..<700_000, to: target, progress: { total in reports.withLock { $0.append(total) } },
                    received: { piece in pieces.withLock { $0.append(Array(piece)) } })
                let handed = pieces.withLock { $0 }
                #expect(handed.count > 1)
                #expect(Array(handed.joined()) == Array(bytes[1_000...]))
                #expect(try Array(Data(contentsOf: URL(fileURLWithPath: target))) == bytes)
                // One report after each piece, of the bytes written so far.
                var total: Int64 = 0
                let expected = handed.map { piece in
                    total += Int64(piece.count)
                    return total
                }
                #expect(reports.withLock { $0 } == expected)
            }
        }
    }

    #if os(Linux)
    @Test func aFileThatTakesNoMoreBytes_failsTheDownloadWithItsOwnError() async throws {
        try await AttachmentTestServer.run { running, _ in
            let transport = try Self.transport(running)
            let bytes = AttachmentTestServer.random(100_000)
            let hash = AttachmentTestServer.hash(bytes)
            try await Self.withFile(bytes) { path in
                _ = try await transport.uploadAttachment(hash, size: 100_000, from: path, offset: 0, progress: nil)
                try await AttachmentTestServer.reference(bytes, in: running)
            }
            // Every write to /dev/full fails with ENOSPC: a full disk, not the network.
            let pieces = Mutex(0)
            let error = await #expect(throws: AttachmentFileError.self) {
                try await transport.downloadAttachment(hash, range: nil, to: "/dev/full", progress: nil, received: { _ in pieces.withLock { $0 += 1 } })
            }
            #expect(error?.code == ENOSPC && error?.call == "write", "\(String(describing: error))")
            #expect(pieces.withLock { $0 } == 0)
        }
    }
    #endif

    @Test func anUnreachableServer_isATransportError() async throws {
        // A port nothing listens on: the server's, after it stopped.
        let url = try await AttachmentTestServer.run { running, _ in running.syncURL }
        let transport = try NIOAttachmentTransport(url: url)
        await #expect(throws: TransportError.self) { _ = try await transport.attachmentHeld(AttachmentTestServer.hash([1])) }
    }

    @Test func httpsAndBadHashes_areRefusedBeforeAnythingIsSent() async throws {
        #expect(throws: NIOAttachmentTransport.UnsupportedURL.self) {
            _ = try NIOAttachmentTransport(url: URL(string: "https://example.com/sync")!)
        }
        let transport = try NIOAttachmentTransport(url: URL(string: "http://127.0.0.1:9/sync")!)
        let error = await #expect(throws: SyncRequestRejected.self) { _ = try await transport.attachmentHeld("not-a-hash") }
        #expect(error?.code == "invalidHash")
    }

    /// Hands out `tokens` in turn and records each call's `refresh`.
    final class TokenSource: Sendable {
        let calls = Mutex<[Bool]>([])
        let tokens: [String]
        init(_ tokens: [String]) { self.tokens = tokens }

        func next(refresh: Bool) -> String {
            calls.withLock { calls in
                calls.append(refresh)
                return tokens[min(calls.count, tokens.count) - 1]
            }
        }
    }

    @Test func a401_asksForAFreshToken_andSendsTheUploadAgain() async throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("attachments-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try DirectoryAttachmentStore(directory: directory)
        var configuration = SyncHTTPServer.Configuration(port: 0)
        configuration.attachments = SyncHTTPServer.Attachments(store: store)
        // The whole suite on two cores can hold the client's next 16 KiB chunk back for longer
        // than the default 10 s between reads; the server then closes the connection without
        // a word (the failure "closed before the response ended", token asked once, nothing
        // logged; a 1 ms read timeout reproduces it alone). This test is about the 401.
        configuration.readTimeout = .seconds(120)
        let server = try RevisionServer(.memory, schema: AttachmentTestServer.schema())
        let verifier = try await TestTokens.verifier()
        let expired = try await TestTokens.token("ann", expiresIn: -60)
        let fresh = try await TestTokens.token("ann")
        try await withHTTPServer(making: { logger, onListening in
            SyncHTTPServer(
                server: server, configuration: configuration, logger: logger,
                middleware: { $0.add(middleware: BearerAuthenticator(verifier: verifier)) }, onListening: onListening)
        }) { running in
            let bytes = AttachmentTestServer.random(200_000)
            let hash = AttachmentTestServer.hash(bytes)
            let source = TokenSource([expired, fresh])
            let transport = try Self.transport(running, token: { source.next(refresh: $0) })
            let held: AttachmentHolding
            do {
                held = try await Self.withFile(bytes) { path in
                    try await transport.uploadAttachment(hash, size: 200_000, from: path, offset: 0, progress: nil)
                }
            } catch {
                // What the server logged goes with a failure.
                Issue.record("token calls \(source.calls.withLock { $0 }); the server logged: \(running.logs.entries.map { "\($0.level) \($0.message) \($0.metadata)" })")
                throw error
            }
            #expect(held == .complete(size: 200_000))
            #expect(source.calls.withLock { $0 } == [false, true])
            #expect(try await store.held(hash) == .complete(size: 200_000))
            // A token that stays expired: one retry, then the refusal.
            let stale = TokenSource([expired])
            let refused = try Self.transport(running, token: { stale.next(refresh: $0) })
            let error = await #expect(throws: SyncRequestRejected.self) {
                _ = try await Self.withFile(bytes) { path in
                    try await refused.uploadAttachment(hash, size: 200_000, from: path, offset: 0, progress: nil)
                }
            }
            #expect(error?.status == 401 && error?.code == "unauthenticated")
            #expect(stale.calls.withLock { $0 } == [false, true])
        }
    }
}

/// Connections that drop half-way, from a server of one connection that stops early.
@Suite struct NIOAttachmentDroppedConnectionTests {
    @Test func anUploadWhoseConnectionDrops_isATransportError() async throws {
        // Takes some 100 KB of the request, then closes without an answer.
        let server = try OneShotServer { connection in
            var buffer = [UInt8](repeating: 0, count: 64 << 10)
            var got = 0
            while got < 100_000 {
                let count = read(connection, &buffer, buffer.count)
                guard count > 0 else { return }
                got += count
            }
        }
        let transport = try NIOAttachmentTransport(url: URL(string: "http://127.0.0.1:\(server.port)/sync")!, chunkBytes: 64 << 10)
        let bytes = AttachmentTestServer.random(4 << 20)
        await #expect(throws: TransportError.self) {
            _ = try await NIOAttachmentTransportTests.withFile(bytes) { path in
                try await transport.uploadAttachment(AttachmentTestServer.hash(bytes), size: Int64(bytes.count), from: path, offset: 0, progress: nil)
            }
        }
    }

    @Test func aDownloadWhoseConnectionDrops_isATransportError_andKeepsWhatArrived() async throws {
        let body = AttachmentTestServer.random(30_000)
        // Answers 100,000 bytes, sends 30,000 and closes.
        let server = try OneShotServer { connection in
            guard OneShotServer.readHead(connection) else { return }
            let answer = Array("HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n".utf8) + body
            _ = answer.withUnsafeBytes { write(connection, $0.baseAddress, $0.count) }
        }
        let transport = try NIOAttachmentTransport(url: URL(string: "http://127.0.0.1:\(server.port)/sync")!)
        let hash = AttachmentTestServer.hash([1, 2, 3])
        let file = try await NIOAttachmentTransportTests.withFile([9, 9]) { (path) async throws -> [UInt8] in
            await #expect(throws: TransportError.self) { try await transport.downloadAttachment(hash, range: nil, to: path, progress: nil) }
            return try Array(Data(contentsOf: URL(fileURLWithPath: path)))
        }
        // The two bytes before, then the 30,000 that came.
        #expect(file == [9, 9] + body)
    }
}

/// A TCP server on 127.0.0.1 for one connection, handled by `handle` on a thread of its
/// own and closed after it.
final class OneShotServer: Sendable {
    let port: Int
    private let listener: Int32

    /// Reads a request's head (to its blank line) from `connection`; false when it closed first.
    static func readHead(_ connection: Int32) -> Bool {
        var request: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4_096)
        while !request.suffix(4).elementsEqual("\r\n\r\n".utf8) {
            let count = read(connection, &buffer, buffer.count)
            guard count > 0 else { return false }
            request += buffer[..<count]
        }
        return true
    }

    init(_ handle: @escaping @Sendable (Int32) -> Void) throws {
        let listener = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(listener, pointer, length) == 0 && getsockname(listener, pointer, &length) == 0 && listen(listener, 1) == 0
            }
        }
        guard bound else {
            close(listener)
            throw RawHTTP.Failure(description: "bind: errno \(errno)")
        }
        self.listener = listener
        port = Int(UInt16(bigEndian: address.sin_port))
        Thread {
            let connection = accept(listener, nil, nil)
            guard connection >= 0 else { return }
            handle(connection)
            close(connection)
        }.start()
    }

    deinit {
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
    }
}
