import FieldMerge
@testable import FieldMergeSQLite
import Foundation
import Testing

/// The device's attachment cache and upload queue (Specs/attachments.md, "The device").
@Suite struct StoreAttachmentCacheTests {
    static let schema = try! Schema([Entity("photos", fields: [Field("caption", .text), Field("image", .attachment)])])

    static func bytes(_ count: Int, seed: UInt8 = 7) -> [UInt8] {
        (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ Int(seed) &+ $0 / 251) }
    }

    static func files(_ store: Store) throws -> [String] { try store.attachmentCache().cachedDigests().sorted() }

    @Test func attachingBytes_cachesThem_queuesTheUpload_andSetsTheFieldAsALocalEdit() throws {
        let store = try Store(.memory, schema: Self.schema, replica: ReplicaID(1))
        let id = try store.untyped.insert("photos", values: ["beach", .null])
        _ = try store.pendingChanges()
        let bytes = Self.bytes(1_000)
        let reference = try store.attach(bytes, mediaType: "image/jpeg", to: "photos", id: id, field: "image")
        #expect(reference.sha256 == SHA256.hex(SHA256.hash(bytes)) && reference.size == 1_000 && reference.mediaType == "image/jpeg")
        #expect(try store.untyped.record("photos", id: id)?.values[1] == .text(reference.text))
        #expect(try store.pendingChanges().map(\.id) == [id])
        #expect(try store.queuedAttachments().map(\.reference) == [reference])
        #expect(try store.attachmentBytes(reference) == bytes)
        let path = try #require(try store.attachmentPath(reference))
        #expect(path.hasSuffix("/\(reference.sha256.prefix(2))/\(reference.sha256)"))
        // The same bytes on another record: one file, one queue entry.
        let other = try store.untyped.insert("photos", values: ["again", .null])
        #expect(try store.attach(bytes, mediaType: "image/png", to: "photos", id: other, field: "image").sha256 == reference.sha256)
        #expect(try Self.files(store) == [reference.sha256])
        #expect(try store.queuedAttachments().count == 1)
        // A cached file cut short (a disk fault) is not served, and attaching again repairs it.
        try Data(bytes.prefix(10)).write(to: URL(fileURLWithPath: path))
        #expect(try store.attachmentPath(reference) == nil)
        try store.attach(bytes, mediaType: "image/jpeg", to: "photos", id: id, field: "image")
        #expect(try store.attachmentBytes(reference) == bytes)
    }

    @Test func attachingAFile_copiesItInChunks_withItsHash() throws {
        let folder = TemporaryFolder()
        defer { folder.remove() }
        let bytes = Self.bytes(600 * 1024 + 17)  // three chunks of 256 KiB
        try Data(bytes).write(to: URL(fileURLWithPath: folder.file("photo.jpg")))
        let store = try Store(.memory, schema: Self.schema, replica: ReplicaID(1))
        try store.useAttachmentDirectory(folder.file("cache"))
        let id = try store.untyped.insert("photos", values: ["big", .null])
        let reference = try store.attach(contentsOf: folder.file("photo.jpg"), mediaType: "image/jpeg", to: "photos", id: id, field: "image")
        #expect(reference.sha256 == SHA256.hex(SHA256.hash(bytes)) && reference.size == Int64(bytes.count))
        #expect(try store.attachmentBytes(reference) == bytes)
        #expect(try store.attachmentPath(reference)?.hasPrefix(folder.file("cache/")) == true)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.file("cache/tmp")).isEmpty)
    }

    @Test func theQueueAndTheCache_surviveReopeningTheFile_andAnOlderFileOpens() throws {
        let folder = TemporaryFolder()
        defer { folder.remove() }
        let path = folder.file("device.sqlite")
        var store: Store? = try Store(.file(path: path), schema: Self.schema, replica: ReplicaID(1))
        let id = try store!.untyped.insert("photos", values: ["x", .null])
        let reference = try store!.attach(Self.bytes(300), mediaType: "image/png", to: "photos", id: id, field: "image")
        store!.close()
        store = nil
        #expect(FileManager.default.fileExists(atPath: path + ".attachments/\(reference.sha256.prefix(2))/\(reference.sha256)"))
        let reopened = try Store(.file(path: path), schema: Self.schema)
        #expect(try reopened.queuedAttachments().map(\.reference) == [reference])
        #expect(try reopened.attachmentBytes(reference) == Self.bytes(300))
        // A store file from before attachments (no table) opens, with an empty queue.
        try reopened.database.execute("DROP TABLE \"__fm_attachments\"")
        reopened.close()
        let older = try Store(.file(path: path), schema: Self.schema)
        #expect(try older.queuedAttachments().isEmpty)
        older.close()
    }

    @Test func eviction_removesLeastRecentlyUsedDownloads_neverAnOwedUpload() throws {
        let store = try Store(.memory, schema: Self.schema, replica: ReplicaID(1))
        let id = try store.untyped.insert("photos", values: ["mine", .null])
        let owed = try store.attach(Self.bytes(1_000, seed: 1), mediaType: "image/png", to: "photos", id: id, field: "image")
        var downloaded: [AttachmentReference] = []
        for seed in UInt8(2)...4 {
            let bytes = Self.bytes(1_000, seed: seed)
            let cache = try store.attachmentCache()
            let temporary = cache.downloadPath(SHA256.hex(SHA256.hash(bytes)))
            try Data(bytes).write(to: URL(fileURLWithPath: temporary))
            let reference = try AttachmentReference(sha256: SHA256.hex(SHA256.hash(bytes)), size: 1_000, mediaType: "image/png")
            _ = try store.adoptAttachment(temporary, as: reference)
            downloaded.append(reference)
        }
        _ = try store.attachmentPath(downloaded[0])  // now the most recent
        // Setting the limit evicts at once: nothing is left to evict after.
        try store.setAttachmentCacheLimit(2_000)
        #expect(try store.evictAttachments() == 0)
        #expect(try store.attachmentPath(downloaded[1]) == nil && store.attachmentPath(downloaded[2]) == nil)
        #expect(try store.attachmentPath(downloaded[0]) != nil && store.attachmentPath(owed) != nil)
        // Below what the owed file takes alone: it still stays.
        try store.setAttachmentCacheLimit(10)
        #expect(try store.evictAttachments() == 0)
        #expect(try Self.files(store) == [owed.sha256])
        #expect(try store.queuedAttachments().map(\.reference) == [owed])
    }

    @Test func theCacheLimit_isKeptInTheFile_andANegativeOneRefused() throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("limit-\(UUID().uuidString).sqlite").path
        defer { for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) } }
        do {
            let store = try Store(.file(path: path), schema: Self.schema, replica: ReplicaID(1))
            #expect(store.attachmentCacheLimit == nil)
            try store.setAttachmentCacheLimit(5_000)
            #expect(throws: StoreError.self) { try store.setAttachmentCacheLimit(-1) }
            #expect(store.attachmentCacheLimit == 5_000)
            store.close()
        }
        do {
            let store = try Store(.file(path: path), schema: Self.schema)
            #expect(store.attachmentCacheLimit == 5_000)
            try store.setAttachmentCacheLimit(nil)
            store.close()
        }
        let store = try Store(.file(path: path), schema: Self.schema)
        #expect(store.attachmentCacheLimit == nil)
        store.close()
    }

    @Test func collectingWhenDue_runsOncePerInterval_byTheStoresClock() throws {
        let wall = ManualWallClock(milliseconds: 1_000_000)
        let store = try Store(.memory, schema: Self.schema, replica: ReplicaID(1), wall: wall)
        let id = try store.untyped.insert("photos", values: ["x", .null])
        let first = try store.attach(Self.bytes(100, seed: 1), mediaType: "image/png", to: "photos", id: id, field: "image")
        _ = try store.attach(Self.bytes(100, seed: 2), mediaType: "image/png", to: "photos", id: id, field: "image")
        try store.markAttachmentUploaded(first.sha256)
        // Never ran: due. Nothing removable yet is still a run.
        #expect(try store.collectAttachmentsIfDue(everyMilliseconds: 60_000) == 1)
        _ = try store.attach(Self.bytes(100, seed: 3), mediaType: "image/png", to: "photos", id: id, field: "image")
        wall.advance(by: 59_999)
        #expect(try store.collectAttachmentsIfDue(everyMilliseconds: 60_000) == nil)
        wall.advance(by: 1)
        #expect(try store.collectAttachmentsIfDue(everyMilliseconds: 60_000) == 0)  // the second is owed still
        // A clock that went back counts as due.
        wall.advance(by: -120_000)
        #expect(try store.collectAttachmentsIfDue(everyMilliseconds: 60_000) == 0)
    }

    @Test func collecting_removesWhatNoRecordOrUploadNeeds() throws {
        let store = try Store(.memory, schema: Self.schema, replica: ReplicaID(1))
        let id = try store.untyped.insert("photos", values: ["x", .null])
        let first = try store.attach(Self.bytes(100, seed: 1), mediaType: "image/png", to: "photos", id: id, field: "image")
        let second = try store.attach(Self.bytes(100, seed: 2), mediaType: "image/png", to: "photos", id: id, field: "image")
        #expect(try store.collectAttachments() == 0)  // both owed
        try store.markAttachmentUploaded(first.sha256)
        #expect(try store.collectAttachments() == 1)  // first: uploaded and no longer referenced
        #expect(try Self.files(store) == [second.sha256])
        try store.markAttachmentUploaded(second.sha256)
        // Left by a crash: a copy half written, a download to resume.
        let temporary = try store.attachmentCache().temporaryDirectory
        try Data([1, 2, 3]).write(to: URL(fileURLWithPath: temporary + "/part-AbC123"))
        try Data([4, 5]).write(to: URL(fileURLWithPath: temporary + "/\(String(repeating: "c", count: 64)).download"))
        #expect(try store.collectAttachments() == 0)  // second: referenced
        #expect(try store.attachmentBytes(second) == Self.bytes(100, seed: 2))
        #expect(try FileManager.default.contentsOfDirectory(atPath: temporary) == ["\(String(repeating: "c", count: 64)).download"])
    }

    @Test func refusals_nameTheProblem_andChangeNothing() throws {
        let folder = TemporaryFolder()
        defer { folder.remove() }
        let store = try Store(.memory, schema: Self.schema, replica: ReplicaID(1))
        let id = try store.untyped.insert("photos", values: ["x", .null])
        let bytes = Self.bytes(10)
        let cases: [(StoreError.Code, () throws -> Void)] = [
            (.unknownEntity, { try store.attach(bytes, mediaType: "image/png", to: "videos", id: id, field: "image") }),
            (.unknownField, { try store.attach(bytes, mediaType: "image/png", to: "photos", id: id, field: "picture") }),
            (.invalidArgument, { try store.attach(bytes, mediaType: "image/png", to: "photos", id: id, field: "caption") }),
            (.invalidArgument, { try store.attach(bytes, mediaType: "image/PNG", to: "photos", id: id, field: "image") }),
            (.invalidArgument, { try store.attach(bytes, mediaType: "png", to: "photos", id: id, field: "image") }),
            (.recordNotFound, { try store.attach(bytes, mediaType: "image/png", to: "photos", id: 99, field: "image") }),
            (.file, {
                try store.attach(contentsOf: folder.file("missing.jpg"), mediaType: "image/png", to: "photos", id: id, field: "image")
            }),
        ]
        for (code, attach) in cases {
            let error = #expect(throws: StoreError.self) { try attach() }
            #expect(error?.code == code, "\(String(describing: error))")
        }
        #expect(try store.untyped.record("photos", id: id)?.values[1] == .null)
        #expect(try store.queuedAttachments().isEmpty)
        #expect(try Self.files(store).isEmpty)
    }

    @Test func refusedUploads_backOff_andAreGivenUpAfterTheLimit() throws {
        let wall = ManualWallClock(milliseconds: 1_000_000)
        let store = try Store(.memory, schema: Self.schema, replica: ReplicaID(1), wall: wall)
        let id = try store.untyped.insert("photos", values: ["x", .null])
        let reference = try store.attach(Self.bytes(10), mediaType: "image/png", to: "photos", id: id, field: "image")
        #expect(try store.dueAttachments(at: 1_000_000).count == 1)
        let first = try #require(try store.noteAttachmentRefused(reference.sha256, "too large"))
        #expect(first.attempts == 1 && first.nextAttempt == 1_060_000 && first.failure == "too large")
        #expect(try store.dueAttachments(at: 1_059_999).isEmpty && store.dueAttachments(at: 1_060_000).count == 1)
        for _ in 2...Store.maxAttachmentAttempts { try store.noteAttachmentRefused(reference.sha256, "too large") }
        #expect(try store.queuedAttachments().first?.isGivenUp == true)
        #expect(try store.dueAttachments(at: Int64.max - 1).isEmpty)
        try store.retryAttachmentUploads()
        #expect(try store.dueAttachments(at: 1_000_000).map(\.attempts) == [0])
    }
}
