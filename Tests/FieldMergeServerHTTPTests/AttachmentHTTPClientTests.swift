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

    /// A photo of `count` random bytes that `a` attached and synced, whose record `b` then
    /// synced and whose first `arrived` bytes `b` downloaded before it stopped; `b`'s
    /// download progress from now on goes to the log returned.
    static func stoppedDownload(
        _ count: Int, arrived: Int, from a: SyncClient, to b: SyncClient
    ) async throws -> (reference: AttachmentReference, bytes: [UInt8], progress: ProgressLog) {
        let bytes = AttachmentTestServer.random(count)
        let reference = try await a.write { store in
            let id = try store.untyped.insert("photos", values: ["x", .null])
            return try store.attach(bytes, mediaType: "image/jpeg", to: "photos", id: id, field: "image")
        }
        _ = try await a.sync()
        _ = try await b.sync()
        let partial = try await b.withStore { try $0.attachmentDownloadPath(reference) }
        try Data(bytes[..<arrived]).write(to: URL(fileURLWithPath: partial))
        let log = ProgressLog()
        await b.setAttachmentProgress { event in log.events.withLock { $0.append(event.bytes) } }
        return (reference, bytes, log)
    }

    final class ProgressLog: Sendable {
        let events = Mutex<[Int64]>([])
        var seen: [Int64] { events.withLock { $0 } }
    }

    @Test func aDownloadThatStopped_resumesWithARange() async throws {
        try await AttachmentTestServer.run { running, _ in
            let (a, _) = try Self.device(1, running)
            let (b, _) = try Self.device(2, running)
            // The first 50,000 bytes arrived before the app was stopped.
            let (reference, bytes, progress) = try await Self.stoppedDownload(200_000, arrived: 50_000, from: a, to: b)
            #expect(try await b.attachmentBytes(reference) == bytes)
            #expect(progress.seen.last == 200_000)
            #expect(progress.seen.allSatisfy { $0 > 50_000 })
        }
    }

    /// A download in pieces (one ranged `GET` each), from where an earlier one stopped: the
    /// file is whole, and the progress grows piece by piece to the end.
    @Test func aDownloadGoesInRangedPieces() async throws {
        try await AttachmentTestServer.run { running, _ in
            let (a, _) = try Self.device(1, running)
            let transport = HTTPTransport(url: running.syncURL, configuration: .init(attachmentDownloadPieceBytes: 40_000))
            let b = SyncClient(store: try Store(.memory, schema: AttachmentTestServer.schema(), replica: ReplicaID(2)), transport: transport)
            let (reference, bytes, progress) = try await Self.stoppedDownload(150_000, arrived: 10_000, from: a, to: b)
            #expect(try await b.attachmentBytes(reference) == bytes)
            let seen = progress.seen
            #expect(seen.last == 150_000 && seen == seen.sorted())
            // The ends of the pieces: 10,000 + 40,000 × k, and the last byte.
            for end in [50_000, 90_000, 130_000] as [Int64] { #expect(seen.contains(end), "\(seen)") }
        }
    }

    @Test func eachPieceHandedOn_isWhatWentIntoTheFile_acrossRangedRequests() async throws {
        try await AttachmentTestServer.run(checkReferences: false) { running, _ in
            let bytes = AttachmentTestServer.random(150_000)
            let hash = AttachmentTestServer.hash(bytes)
            let transport = HTTPTransport(url: running.syncURL, configuration: .init(attachmentDownloadPieceBytes: 40_000))
            try await NIOAttachmentTransportTests.withFile(bytes) { path in
                #expect(try await transport.uploadAttachment(hash, size: 150_000, from: path, offset: 0, progress: nil) == .complete(size: 150_000))
                try await AttachmentTestServer.reference(bytes, in: running)
                let target = path + ".down"
                try Data(bytes[..<10_000]).write(to: URL(fileURLWithPath: target))
                let pieces = Mutex<[UInt8]>([])
                try await transport.downloadAttachment(
                    hash, range: 10_000..<150_000, to: target, progress: nil, received: { piece in pieces.withLock { $0 += piece } })
                #expect(pieces.withLock { $0 } == Array(bytes[10_000...]))
                #expect(try Array(Data(contentsOf: URL(fileURLWithPath: target))) == bytes)
            }
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
            let uploads = Mutex<[Int64]>([])
            await a.setAttachmentProgress { event in uploads.withLock { $0.append(event.bytes) } }
            let summary = try await a.sync()
            #expect(summary.refused.isEmpty && summary.attachmentBytesUploaded == 80_000)
            // Resumed: in pieces of 64 KiB from what the server held.
            #expect(uploads.withLock { $0 } == [135_536, 150_000])
            #expect(try await transport.attachmentHeld(reference.sha256) == .complete(size: 150_000))
        }
    }
}
