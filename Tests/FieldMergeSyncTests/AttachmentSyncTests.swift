import FieldMerge
import FieldMergeProtocol
import FieldMergeSQLite
import FieldMergeServer
import FieldMergeServerSQLite
import FieldMergeTestSupport
@testable import FieldMergeSync
import Foundation
import Synchronization
import Testing
import FieldMergeFiles

/// Devices attach, upload, download and open attachments through a server in this process
/// (Specs/attachments.md, "The device").
@Suite struct AttachmentSyncTests {
    @Test func aPhotoAttachedOnA_goesUpBeforeItsRecord_andOpensOnB() async throws {
        let world = try AttachmentWorld()
        let (ta, tb) = (world.transport(), world.transport())
        let (a, b) = (try world.device(1, ta), try world.device(2, tb))
        let bytes = AttachmentWorld.random(700 * 1024, seed: 1)
        let reference = try await world.photo(a, bytes)
        let progress = Mutex<[AttachmentProgress]>([])
        await a.setAttachmentProgress { event in progress.withLock { $0.append(event) } }
        await b.setAttachmentProgress { event in progress.withLock { $0.append(event) } }

        let sent = try await a.sync()
        #expect(sent.refused.isEmpty && sent.attachmentFailures.isEmpty)
        #expect(sent.attachmentsUploaded == 1 && sent.attachmentBytesUploaded == Int64(bytes.count))
        #expect(try await world.held(reference) == .complete(size: Int64(bytes.count)))
        #expect(try await world.serverReferences() == [reference.text])
        #expect(try await a.withStore { try $0.queuedAttachments() }.isEmpty)

        _ = try await b.sync()
        let seen = try await b.withStore { try $0.attachmentReferences(of: "photos") }
        #expect(seen == [reference])
        #expect(try await b.withStore { try $0.attachmentPath(reference) } == nil)  // onAccess: not yet
        let path = try await b.attachment(reference)
        #expect(try AttachmentFiles.size(of: path) == Int64(bytes.count))
        #expect(try AttachmentFiles.hash(path).sha256 == reference.sha256)
        #expect(try await b.attachmentBytes(reference) == bytes)
        #expect(tb.snapshot.downloads == 1)  // the second opening reads the cache

        let events = progress.withLock { $0 }
        #expect(events.last(where: { $0.direction == .upload })?.bytes == Int64(bytes.count))
        #expect(events.last(where: { $0.direction == .download })?.bytes == Int64(bytes.count))
        #expect(events.filter { $0.direction == .download }.count >= 3)  // chunk by chunk
    }

    @Test func theSamePhotoOnTwoDevices_isUploadedOnce_andNeverAgain() async throws {
        let world = try AttachmentWorld()
        let (ta, tb) = (world.transport(), world.transport())
        let (a, b) = (try world.device(1, ta), try world.device(2, tb))
        let bytes = AttachmentWorld.random(40_000, seed: 2)
        let reference = try await world.photo(a, bytes, caption: "from A")
        #expect(try await world.photo(b, bytes, caption: "from B") == reference)
        _ = try await a.sync()
        let fromB = try await b.sync()
        #expect(fromB.refused.isEmpty && fromB.attachmentsUploaded == 1 && fromB.attachmentBytesUploaded == 0)
        #expect(ta.snapshot.uploads == 1 && tb.snapshot.uploads == 0 && tb.snapshot.heads == 1)
        // Confirmed: later syncs neither send the bytes nor ask about them.
        for client in [a, b] { _ = try await client.sync() }
        _ = try await a.write { store in
            try store.untyped.update("photos", id: 1, ["caption": .text("edited")])
        }
        _ = try await a.sync()
        #expect(ta.snapshot.uploads == 1 && ta.snapshot.heads == 1 && tb.snapshot.heads == 1)
        #expect(try await world.serverReferences() == [reference.text, reference.text])
    }

    @Test func anInterruptedUpload_resumesAtTheOffsetTheServerHolds() async throws {
        let world = try AttachmentWorld()
        let ta = world.transport()
        let a = try world.device(1, ta)
        let bytes = AttachmentWorld.random(300_000, seed: 3)
        let reference = try await world.photo(a, bytes)
        // An upload that stopped after 100,000 bytes (the app was killed).
        let upload = try await world.bytes.upload(reference.sha256, at: 0)
        try await upload.append(Array(bytes[..<100_000]))
        await upload.close()

        let summary = try await a.sync()
        #expect(ta.snapshot.uploadOffsets == [100_000])
        #expect(summary.attachmentBytesUploaded == 200_000 && summary.refused.isEmpty)
        #expect(try await world.held(reference) == .complete(size: 300_000))
        var read: [UInt8] = []
        for try await chunk in try await world.bytes.read(reference.sha256, range: 0..<300_000) { read += chunk }
        #expect(read == bytes)
    }

    @Test func offline_theSyncFailsRetryably_andNothingIsLostOrSentBeforeItsBytes() async throws {
        let world = try AttachmentWorld()
        let ta = world.transport()
        let a = try world.device(1, ta)
        let reference = try await world.photo(a, AttachmentWorld.random(1_000, seed: 4))
        ta.setOffline(true)
        let error = await #expect(throws: SyncError.self) { try await a.sync() }
        #expect(error?.code == .unreachable && error?.isRetryable == true)
        #expect(try await world.serverReferences().isEmpty)
        #expect(try await a.withStore { try $0.queuedAttachments() }.map(\.attempts) == [0])
        ta.setOffline(false)
        #expect(try await a.sync().refused.isEmpty)
        #expect(try await world.serverReferences() == [reference.text])
    }

    @Test func aRestartBetweenAttachAndSync_stillUploads() async throws {
        let world = try AttachmentWorld()
        let first = try world.device(file: "a.sqlite", 1, world.transport())
        let reference = try await world.photo(first, AttachmentWorld.random(5_000, seed: 5))
        await first.close()
        let ta = world.transport()
        let again = try world.device(file: "a.sqlite", 1, ta)
        let summary = try await again.sync()
        #expect(summary.refused.isEmpty && summary.attachmentsUploaded == 1 && ta.snapshot.uploads == 1)
        #expect(try await world.held(reference) == .complete(size: 5_000))
        #expect(try await world.serverReferences() == [reference.text])
        await again.close()
    }

    @Test func aDeviceThatMayNotReadTheRecord_getsAClearError() async throws {
        let world = try AttachmentWorld(readable: { identity, entity in entity != "photos" || identity?.user != "zoe" })
        let a = try world.device(1, world.transport(SyncIdentity(user: "ann")))
        let zoe = try world.device(2, world.transport(SyncIdentity(user: "zoe")))
        let reference = try await world.photo(a, AttachmentWorld.random(2_000, seed: 6))
        _ = try await a.sync()
        let error = await #expect(throws: AttachmentError.self) { try await zoe.attachment(reference) }
        #expect(error?.code == .forbidden && error?.isRetryable == false)
        #expect(try await zoe.withStore { try $0.attachmentPath(reference) } == nil)
    }

    @Test func eagerEntities_downloadAfterTheSync_andNeverOnesDoNot() async throws {
        let world = try AttachmentWorld()
        let a = try world.device(1, world.transport())
        let (tb, tc) = (world.transport(), world.transport())
        let (b, c) = (try world.device(2, tb), try world.device(3, tc))
        let reference = try await world.photo(a, AttachmentWorld.random(3_000, seed: 7))
        _ = try await a.sync()
        await b.setDownloadPolicy(.eager, for: "photos")
        let summary = try await b.sync()
        #expect(summary.attachmentsDownloaded == 1 && tb.snapshot.downloads == 1)
        #expect(try await b.withStore { try $0.attachmentPath(reference) } != nil)
        await c.setDownloadPolicy(.never, for: "photos")
        _ = try await c.sync()
        let error = await #expect(throws: AttachmentError.self) { try await c.attachment(reference, entity: "photos") }
        #expect(error?.code == .notCached && tc.snapshot.downloads == 0)
    }

    @Test func withoutAnAttachmentTransport_theRecordIsRefused_thenSentOnceTheBytesAre() async throws {
        let world = try AttachmentWorld()
        let plain = SyncClient(
            store: try Store(.file(path: "\(world.directory)/a.sqlite"), schema: AttachmentWorld.schema, replica: ReplicaID(1)),
            transport: RecordsOnlyTransport(inner: InProcessTransport(server: world.server)))
        let reference = try await world.photo(plain, AttachmentWorld.random(1_000, seed: 8))
        let refused = try await plain.sync()
        #expect(refused.refused.map(\.code) == ["attachmentMissing"])
        #expect(try await world.serverReferences().isEmpty)
        await plain.close()
        let capable = try world.device(file: "a.sqlite", 1, world.transport())
        let summary = try await capable.sync()
        #expect(summary.attachmentsUploaded == 1 && summary.refused.isEmpty)
        #expect(try await world.serverReferences() == [reference.text])
        #expect(try await capable.withStore { try $0.unsyncedChanges() }.isEmpty)
        await capable.close()
    }

    @Test func aRefusedUpload_isReported_countedAndPutOff() async throws {
        let world = try AttachmentWorld()
        let small = CountingTransport(InProcessTransport(server: world.server, attachmentMaxBytes: 100))
        let a = try world.device(1, small)
        let reference = try await world.photo(a, AttachmentWorld.random(1_000, seed: 9))
        let summary = try await a.sync()
        #expect(summary.attachmentFailures.map(\.code) == [.rejected] && summary.attachmentFailures.first?.reference == reference)
        #expect(summary.refused.map(\.code) == ["attachmentMissing"])
        #expect(try await a.withStore { try $0.queuedAttachments() }.map(\.attempts) == [1])
        _ = try await a.sync()  // put off: not tried again at once
        #expect(small.snapshot.uploads == 1)
    }

    @Test func twoOpeningsAtOnce_downloadOnce_andTheReadOnlyConnectionFindsTheFile() async throws {
        let world = try AttachmentWorld()
        let a = try world.device(1, world.transport())
        let tb = world.transport()
        let b = try world.device(file: "b.sqlite", 2, tb)
        let bytes = AttachmentWorld.random(900_000, seed: 10)
        let reference = try await world.photo(a, bytes)
        _ = try await a.sync()
        _ = try await b.sync()
        async let first = b.attachment(reference)
        async let second = b.attachment(reference)
        let (one, two) = try await (first, second)
        #expect(one == two && tb.snapshot.downloads == 1)
        #expect(try await b.read { try $0.attachmentPath(reference) } == one)
        #expect(try await b.read { try $0.attachmentBytes(reference) } == bytes)
        await b.close()
    }

    @Test func aDamagedCachedFile_isRefusedByTheServer_asCorrupt_andNothingDamagedIsKept() async throws {
        let world = try AttachmentWorld()
        let a = try world.device(1, world.transport())
        let reference = try await world.photo(a, AttachmentWorld.random(4_000, seed: 11))
        // The file in the cache changes under the store (a disk fault): same size, other bytes.
        let path = try #require(try await a.withStore { try $0.attachmentPath(reference) })
        try Data(AttachmentWorld.random(4_000, seed: 12)).write(to: URL(fileURLWithPath: path))
        let summary = try await a.sync()
        #expect(summary.attachmentFailures.map(\.code) == [.corrupt] && summary.attachmentsUploaded == 0)
        #expect(summary.refused.map(\.code) == ["attachmentMissing"])
        #expect(try await world.held(reference) == .absent)
        #expect(try await a.withStore { try $0.queuedAttachments() }.map(\.attempts) == [1])
    }

    @Test func aDownloadDamagedOnTheWay_isCorrupt_andNeverCached_thenComesWhole() async throws {
        let world = try AttachmentWorld()
        let a = try world.device(1, world.transport())
        let tb = world.transport()
        let b = try world.device(2, tb)
        let bytes = AttachmentWorld.random(300_000, seed: 14)
        let reference = try await world.photo(a, bytes)
        _ = try await a.sync()
        _ = try await b.sync()
        tb.damaging.withLock { $0 = true }
        let error = await #expect(throws: AttachmentError.self) { try await b.attachment(reference) }
        #expect(error?.code == .corrupt && error?.isRetryable == true)
        #expect(try await b.withStore { try $0.attachmentPath(reference) } == nil)
        tb.damaging.withLock { $0 = false }
        #expect(try await b.attachmentBytes(reference) == bytes)
    }

    /// A download is hashed as it arrives, with the store's hashing: each byte once, those a
    /// former download left included, and no second pass over the file.
    @Test func aResumedDownload_hashesEachByteOnce_withTheStoresHashing() async throws {
        let world = try AttachmentWorld()
        let a = try world.device(1, world.transport())
        let b = try world.device(2, world.transport())
        let fed = CountingDigest.Counter()
        let counting = CountingDigest.hashing(fed)
        try await b.withStore { $0.attachmentHashing = counting }
        let bytes = AttachmentWorld.random(700_000, seed: 15)
        let reference = try await world.photo(a, bytes)
        _ = try await a.sync()
        _ = try await b.sync()
        let partial = try await b.withStore { try $0.attachmentDownloadPath(reference) }
        try Data(bytes[..<30_000]).write(to: URL(fileURLWithPath: partial))
        #expect(try await b.attachmentBytes(reference) == bytes)
        #expect(fed.value == 700_000)
    }

    @Test func bytesTheServerDoesNotHold_areNotFound_andTheCacheStaysEmpty() async throws {
        let world = try AttachmentWorld()
        let a = try world.device(1, world.transport())
        let b = try world.device(2, world.transport())
        let reference = try await world.photo(a, AttachmentWorld.random(500, seed: 13))
        _ = try await a.sync()
        // The server's file is gone (removed by hand): the record still references it.
        try FileManager.default.removeItem(atPath: "\(world.bytes.directory)/\(reference.sha256.prefix(2))/\(reference.sha256)")
        _ = try await b.sync()
        let error = await #expect(throws: AttachmentError.self) { try await b.attachment(reference) }
        #expect(error?.code == .notFound && error?.isRetryable == true)
        #expect(try await b.withStore { try $0.attachmentPath(reference) } == nil)
    }

    @Test func bytesTheServerRemovedAfterTheUpload_areUploadedAgain_andTheRecordFollows() async throws {
        let world = try AttachmentWorld()
        let ta = world.transport()
        let a = try world.device(1, ta)
        let bytes = AttachmentWorld.random(3_000, seed: 14)
        let reference = try await world.photo(a, bytes, caption: "first")
        _ = try await a.sync()
        // The server's garbage collection removes the bytes (here by hand); the device,
        // which uploaded them, attaches the same photo to a second record.
        try FileManager.default.removeItem(atPath: "\(world.bytes.directory)/\(reference.sha256.prefix(2))/\(reference.sha256)")
        #expect(try await world.photo(a, bytes, caption: "second") == reference)
        #expect(try await a.withStore { try $0.queuedAttachments() }.isEmpty)  // uploaded once: not owed
        let refused = try await a.sync()
        #expect(refused.refused.map(\.code) == ["attachmentMissing"])
        let again = try await a.sync()
        #expect(again.attachmentsUploaded == 1 && again.refused.isEmpty && ta.snapshot.uploads == 2)
        #expect(try await world.held(reference) == .complete(size: 3_000))
        #expect(try await world.serverReferences() == [reference.text, reference.text])
        #expect(try await a.withStore { try $0.unsyncedChanges() }.isEmpty)
    }

    @Test func aSync_collectsTheCacheOncePerInterval() async throws {
        let world = try AttachmentWorld()
        let a = try world.device(1, world.transport())
        let first = try await world.photo(a, AttachmentWorld.random(2_000, seed: 21))
        _ = try await a.sync()  // uploaded; the day's collection finds nothing to remove
        // The photo is replaced: once uploaded, the first file is unreferenced.
        let second = try await a.write { store in
            try store.attach(AttachmentWorld.random(3_000, seed: 22), mediaType: "image/jpeg", to: "photos", id: 1, field: "image")
        }
        let synced = try await a.sync()
        #expect(synced.attachmentsCollected == 0)  // collected less than a day ago
        #expect(try await a.withStore { try $0.attachmentPath(first) } != nil)
        await a.setAttachmentCollection(every: .zero)
        let collected = try await a.sync()
        #expect(collected.attachmentsCollected == 1)
        #expect(try await a.withStore { try $0.attachmentPath(first) } == nil)
        #expect(try await a.withStore { try $0.attachmentPath(second) } != nil)
        await a.setAttachmentCollection(every: nil)
        _ = try await a.write { store in
            try store.attach(AttachmentWorld.random(1_000, seed: 23), mediaType: "image/jpeg", to: "photos", id: 1, field: "image")
        }
        _ = try await a.sync()
        #expect(try await a.sync().attachmentsCollected == 0)
        #expect(try await a.withStore { try $0.attachmentPath(second) } != nil)  // never collected now
    }

    @Test func eagerDownloads_runSeveralAtOnce_upToTheSetWidth() async throws {
        let world = try AttachmentWorld()
        let a = try world.device(1, world.transport())
        var references: [AttachmentReference] = []
        for seed in UInt64(30)..<38 { references.append(try await world.photo(a, AttachmentWorld.random(5_000, seed: seed))) }
        _ = try await a.sync()
        for (width, replica) in [(3, UInt64(2)), (1, UInt64(3))] {
            let transport = world.transport()
            transport.downloadDelay.withLock { $0 = .milliseconds(200) }
            let b = try world.device(replica, transport)
            await b.setDownloadPolicy(.eager, for: "photos")
            await b.setEagerDownloadConcurrency(width)
            let summary = try await b.sync()
            #expect(summary.attachmentsDownloaded == references.count && summary.attachmentFailures.isEmpty)
            #expect(transport.snapshot.downloads == references.count)
            #expect(transport.snapshot.mostDownloading == width)
            for reference in references { #expect(try await b.withStore { try $0.attachmentBytes(reference) }?.count == 5_000) }
        }
    }
}
