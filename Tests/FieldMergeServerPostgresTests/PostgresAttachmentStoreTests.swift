import FieldMerge
import FieldMergeProtocol
@testable import FieldMergeServer
@testable import FieldMergeServerPostgres
import FieldMergeTestSupport
import Foundation
import Testing

/// The PostgreSQL attachment store: every `AttachmentStoreScenario` with each handle on a
/// connection pool of its own (as another `serve --postgres` process has), leases that lapse
/// when a process dies mid-upload, and downloads checked and served through a second server.
@Suite(.enabled(if: PostgresTestEnvironment.shouldRun, "FIELDMERGE_POSTGRES_URL is not set: PostgreSQL suite skipped (Scripts/with-postgres swift test runs it)"))
struct PostgresAttachmentStoreTests {
    /// Small chunks, so that the scenarios' 600,000 bytes span several.
    static let chunk = 64 * 1024

    @Test(arguments: AttachmentStoreScenario.allCases)
    func scenario(_ scenario: AttachmentStoreScenario) async throws {
        try await PostgresTestDatabase.with { database in
            try await scenario.run(AttachmentStoreHarness(chunkLimit: Self.chunk, sharedAcrossProcesses: true) {
                let store = try PostgresAttachmentStore(database.connector(), chunkSize: Self.chunk)
                try await store.prepare()
                return store
            })
        }
    }

    @Test func anUploadInPieces_hashesEachByteOnce_inTheProcessThatHeldIt() async throws {
        try await PostgresTestDatabase.with { database in
            let fed = CountingDigest.Counter()
            let hashing = CountingDigest.hashing(fed)
            let store = try PostgresAttachmentStore(database.connector(), chunkSize: 700, hashing: hashing)
            try await store.prepare()
            let (bytes, hash) = (AttachmentStoreScenario.bytes, AttachmentStoreScenario.hash)
            let pieces = stride(from: 0, to: 6_000, by: 1_000).map { $0..<$0 + 1_000 }
            for piece in pieces {
                let upload = try await store.upload(hash, at: Int64(piece.lowerBound))
                try await upload.append(Array(bytes[piece]))
                await upload.close()
            }
            // Each byte once, where each piece used to read all those before it again.
            #expect(fed.value == 6_000)
            #expect(store.resumable.count == 1)
            // Another process (no kept hash) reads back what is held once, then goes on.
            let other = try PostgresAttachmentStore(database.connector(), chunkSize: 700, hashing: hashing)
            let last = try await other.upload(hash, at: 6_000)
            try await last.append(Array(bytes[6_000...]))
            try await last.finish(size: Int64(bytes.count))
            #expect(fed.value == 6_000 * 2 + bytes.count - 6_000)
            #expect(try await store.held(hash) == .complete(size: Int64(bytes.count)))

            // A partial row removed and made again (garbage collection) has a new generation:
            // the first process's kept hash of the right bytes is not applied to other bytes
            // of the same length that another process put in their place.
            let target = Array(bytes[..<3_000])
            let small = SHA256.hex(SHA256.hash(target))
            let first = try await store.upload(small, at: 0)
            try await first.append(Array(target[..<1_400]))
            await first.close()
            #expect(try await store.remove(small, ifUnchangedFor: 0))
            let first2 = try await store.upload(small, at: 0)  // kept hash forgotten with the row
            try await first2.append(Array(target[..<1_400]))
            await first2.close()
            try await database.execute("DELETE FROM \(store.chunks) WHERE \"sha256\" = $1", small)
            try await database.execute("DELETE FROM \(store.files) WHERE \"sha256\" = $1", small)  // another process's collection
            let intruder = try await other.upload(small, at: 0)
            try await intruder.append(Array(repeating: 7, count: 1_400))
            await intruder.close()
            let resumed = try await store.upload(small, at: 1_400)
            try await resumed.append(Array(target[1_400...]))
            await #expect(throws: AttachmentStoreError.self) { try await resumed.finish(size: 3_000) }
            #expect(try await store.held(small) == .absent)
        }
    }

    @Test func anUploadWhoseProcessDied_isTakenOverOnceItsLeaseLapses_andTheOldOneCannotWriteAnyMore() async throws {
        try await PostgresTestDatabase.with { database in
            let one = try PostgresAttachmentStore(database.connector(), chunkSize: 1_000)
            let other = try PostgresAttachmentStore(database.connector(), chunkSize: 1_000)
            try await one.prepare()
            let (bytes, hash) = (AttachmentStoreScenario.bytes, AttachmentStoreScenario.hash)
            // Never closed: its process "died" after writing two chunks and buffering a part.
            let stale = try await one.upload(hash, at: 0)
            try await stale.append(Array(bytes[..<2_500]))
            await #expect(throws: AttachmentStoreError.busy) { _ = try await other.upload(hash, at: 2_000) }
            // The lease's time passes (set back, rather than waited for).
            try await database.execute(
                "UPDATE \(one.files) SET \"lease_until\" = now() - interval '1 second' WHERE \"sha256\" = $1", hash)
            // What was written is held; what was only buffered is not.
            #expect(try await other.held(hash) == .partial(bytes: 2_000))
            let taken = try await other.upload(hash, at: 2_000)
            await #expect(throws: AttachmentStoreError.busy) { try await stale.append(Array(bytes[2_500..<3_000])) }
            try await taken.append(Array(bytes[2_000...]))
            try await taken.finish(size: Int64(bytes.count))
            #expect(try await one.held(hash) == .complete(size: Int64(bytes.count)))
        }
    }

    @Test func aRecordWrittenThroughOneServer_letsItsBytesBeDownloadedThroughAnother() async throws {
        try await PostgresTestDatabase.with { database in
            let schema = try Schema([Entity("photos", fields: [Field("caption", .text), Field("image", .attachment)])])
            let bytes = Array(AttachmentStoreScenario.bytes[..<70_000])
            let hash = SHA256.hex(SHA256.hash(bytes))
            var options = RevisionServer.Options()
            let writerStore = try PostgresAttachmentStore(database.connector(), chunkSize: Self.chunk)
            try await writerStore.prepare()
            options.attachments = writerStore
            let writer = try await database.server(schema, options: options)
            let readerStore = try PostgresAttachmentStore(database.connector(), chunkSize: Self.chunk)
            options.attachments = readerStore
            let reader = try await database.server(schema, options: options)
            let reference = "sha256:\(hash);\(bytes.count);image/jpeg"
            #expect(try await reader.attachmentAccess(hash, identity: nil) == .unreferenced)
            // Before its bytes are uploaded, the record is refused on its own.
            let early = try await writer.handle(SyncRequest(maxRevision: 0, changeSets: [Send.changeSet(Send.create("photos", -1, [.text("a"), .text(reference)]))]))
            #expect(early.changeSets.first?.refused.first?.code == "attachmentMissing")
            let upload = try await writerStore.upload(hash, at: 0)
            try await upload.append(bytes)
            try await upload.finish(size: Int64(bytes.count))
            let taken = try await writer.handle(SyncRequest(maxRevision: early.maxRevision, changeSets: [Send.changeSet(Send.create("photos", -2, [.text("b"), .text(reference)]))]))
            #expect(taken.changeSets.first?.refused.isEmpty == true)
            #expect(try await reader.attachmentAccess(hash, identity: nil) == .allowed(mediaType: "image/jpeg"))
            var read: [UInt8] = []
            for try await chunk in try await readerStore.read(hash, range: 0..<Int64(bytes.count)) { read += chunk }
            #expect(read == bytes)
        }
    }
}

extension PostgresAttachmentStoreTests {
    @Test func collection_removesWhatNoRecordReferences_throughEitherServer() async throws {
        try await PostgresTestDatabase.with { database in
            let store = try PostgresAttachmentStore(database.connector(), chunkSize: Self.chunk)
            try await store.prepare()
            var options = RevisionServer.Options()
            options.attachments = store
            let server = try await database.server(AttachmentCollectionScenario.schema, options: options)
            try await AttachmentCollectionScenario.run(server: server, store: store)
        }
    }
}
