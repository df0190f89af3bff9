import FieldMerge
import FieldMergeProtocol
import FieldMergeSQLite
import FieldMergeServer
import FieldMergeServerSQLite
@testable import FieldMergeSync
import FieldMergeSyncHTTP
import Foundation
import Synchronization
import Testing
import FieldMergeFiles

/// Two devices exchange an attachment through a real `SyncHTTPServer`, over `HTTPTransport`
/// (Specs/attachments.md, "The device").
@Suite struct AttachmentHTTPClientTests {
    static func device(_ replica: UInt64, _ running: RunningServer, piece: Int = 64 * 1024) throws -> (SyncClient, HTTPTransport) {
        let transport = HTTPTransport(url: running.syncURL, configuration: .init(attachmentPieceBytes: piece))
        let store = try Store(.memory, schema: AttachmentTestServer.schema(), replica: ReplicaID(replica))
        return (SyncClient(store: store, transport: transport), transport)
    }

    @Test func aPhotoGoesUpInPieces_beforeItsRecord_andComesDownOnAnotherDevice() async throws {
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
            // Five pieces of 64 KiB: the progress grows piece by piece.
            #expect(uploads.withLock { $0 } == [65_536, 131_072, 196_608, 262_144, 300_000])

            _ = try await b.sync()
            #expect(try await b.withStore { try $0.attachmentReferences(of: "photos") } == [reference])
            let path = try await b.attachment(reference)
            #expect(try AttachmentFiles.hash(path).sha256 == reference.sha256)
            #expect(try await b.attachmentBytes(reference) == bytes)
        }
    }

    @Test func aDownloadThatStopped_resumesWithARange() async throws {
        try await AttachmentTestServer.run { running, _ in
            let (a, _) = try Self.device(1, running)
            let (b, _) = try Self.device(2, running)
            let bytes = AttachmentTestServer.random(200_000)
            let reference = try await a.write { store in
                let id = try store.untyped.insert("photos", values: ["x", .null])
                return try store.attach(bytes, mediaType: "image/jpeg", to: "photos", id: id, field: "image")
            }
            _ = try await a.sync()
            _ = try await b.sync()
            // The first 50,000 bytes arrived before the app was stopped.
            let partial = try await b.withStore { try $0.attachmentDownloadPath(reference) }
            try Data(bytes[..<50_000]).write(to: URL(fileURLWithPath: partial))
            let downloads = Mutex<[Int64]>([])
            await b.setAttachmentProgress { event in downloads.withLock { $0.append(event.bytes) } }
            #expect(try await b.attachmentBytes(reference) == bytes)
            #expect(downloads.withLock { $0.last } == 200_000)
            #expect(downloads.withLock { $0.allSatisfy { $0 > 50_000 } })
        }
    }

    @Test func bytesNotUploaded_areNotFound_andARetryableError() async throws {
        try await AttachmentTestServer.run(checkReferences: false) { running, _ in
            let missing = AttachmentTestServer.random(1_000)
            try await AttachmentTestServer.reference(missing, in: running)
            let (b, transport) = try Self.device(2, running)
            _ = try await b.sync()
            let reference = try #require(try await b.withStore { try $0.attachmentReferences(of: "photos") }.first)
            let error = await #expect(throws: AttachmentError.self) { try await b.attachment(reference) }
            #expect(error?.code == .notFound && error?.isRetryable == true)
            #expect(try await transport.attachmentHeld(reference.sha256) == .absent)
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
            let summary = try await a.sync()
            #expect(summary.refused.isEmpty && summary.attachmentBytesUploaded == 80_000)
            #expect(try await transport.attachmentHeld(reference.sha256) == .complete(size: 150_000))
        }
    }
}
