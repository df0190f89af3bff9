import FieldMerge
import FieldMergeProtocol
import FieldMergeServer
import Testing

/// What every `AttachmentStore` does (Specs/attachments.md §3), written once: each store's
/// suite runs every case with an ``AttachmentStoreHarness`` of its own.
public enum AttachmentStoreScenario: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case piecesAppendedThenFinishedAreReadBackInBoundedChunks
    case aWrongOffsetNamesWhatIsHeld
    case aMismatchRemovesTheBytesAndNothingIsReadable
    case anotherHandleResumesAClosedUploadAndReadsItOnceFinished
    case anEmptyAttachmentAndOneOfExactlyOneChunk
    case collectionListsAndRemovesOnlyWhatIsUnchangedAndNotUploading

    public var testDescription: String { rawValue }

    public func run(_ harness: AttachmentStoreHarness) async throws {
        switch self {
        case .piecesAppendedThenFinishedAreReadBackInBoundedChunks: try await Self.pieces(harness)
        case .aWrongOffsetNamesWhatIsHeld: try await Self.wrongOffset(harness)
        case .aMismatchRemovesTheBytesAndNothingIsReadable: try await Self.mismatch(harness)
        case .anotherHandleResumesAClosedUploadAndReadsItOnceFinished: try await Self.anotherHandle(harness)
        case .anEmptyAttachmentAndOneOfExactlyOneChunk: try await Self.edges(harness)
        case .collectionListsAndRemovesOnlyWhatIsUnchangedAndNotUploading: try await Self.collecting(harness)
        }
    }

    /// 600,000 bytes that are not a repetition of a short pattern.
    public static let bytes: [UInt8] = (0..<600_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 9) }
    public static let hash = SHA256.hex(SHA256.hash(bytes))

    /// Everything a read of `range` returns, and its largest chunk.
    static func read(_ store: any AttachmentStore, _ sha256: String, _ range: Range<Int64>) async throws -> ([UInt8], Int) {
        var read: [UInt8] = []
        var largest = 0
        for try await chunk in try await store.read(sha256, range: range) {
            largest = max(largest, chunk.count)
            read += chunk
        }
        return (read, largest)
    }

    private static func pieces(_ harness: AttachmentStoreHarness) async throws {
        let store = try await harness.open()
        #expect(try await store.held(hash) == .absent)
        let first = try await store.upload(hash, at: 0)
        try await first.append(Array(bytes[..<100_000]))
        await first.close()
        #expect(try await store.held(hash) == .partial(bytes: 100_000))
        await #expect(throws: AttachmentStoreError.notFound) { _ = try await store.read(hash, range: 0..<1) }
        let second = try await store.upload(hash, at: 100_000)
        // One upload of a hash at a time.
        await #expect(throws: AttachmentStoreError.busy) { _ = try await store.upload(hash, at: 100_000) }
        // Appended in uneven pieces, across chunk boundaries.
        var at = 100_000
        for size in [1, 65_535, 300_000, 7] {
            try await second.append(Array(bytes[at..<(at + size)]))
            at += size
        }
        try await second.append(Array(bytes[at...]))
        #expect(await second.held == 600_000)
        try await second.finish(size: 600_000)
        #expect(try await store.held(hash) == .complete(size: 600_000))
        await #expect(throws: AttachmentStoreError.complete(size: 600_000)) { _ = try await store.upload(hash, at: 0) }
        let (middle, largest) = try await read(store, hash, 10..<599_990)
        #expect(middle == Array(bytes[10..<599_990]))
        #expect(largest <= harness.chunkLimit)
        #expect(try await read(store, hash, 0..<600_000).0 == bytes)
        #expect(try await read(store, hash, 599_999..<600_000).0 == [bytes[599_999]])
    }

    private static func wrongOffset(_ harness: AttachmentStoreHarness) async throws {
        let store = try await harness.open()
        let upload = try await store.upload(hash, at: 0)
        try await upload.append(Array(bytes[..<10]))
        await upload.close()
        await #expect(throws: AttachmentStoreError.offsetMismatch(held: 10)) { _ = try await store.upload(hash, at: 0) }
        await #expect(throws: AttachmentStoreError.offsetMismatch(held: 10)) { _ = try await store.upload(hash, at: 11) }
        // A refused upload does not keep the hash busy.
        let resumed = try await store.upload(hash, at: 10)
        await resumed.close()
        #expect(try await store.held(hash) == .partial(bytes: 10))
    }

    private static func mismatch(_ harness: AttachmentStoreHarness) async throws {
        let store = try await harness.open()
        let wrong = try await store.upload(hash, at: 0)
        try await wrong.append(Array(bytes.reversed()))
        do {
            try await wrong.finish(size: 600_000)
            Issue.record("the reversed bytes were taken for \(hash)")
        } catch let error as AttachmentStoreError {
            guard case .hashMismatch(let expected, let actual, let size) = error else { throw error }
            #expect(expected == hash && size == 600_000)
            #expect(actual == SHA256.hex(SHA256.hash(Array(bytes.reversed()))))
        }
        #expect(try await store.held(hash) == .absent)
        let short = try await store.upload(hash, at: 0)
        try await short.append(Array(bytes[..<5]))
        await #expect(throws: AttachmentStoreError.sizeMismatch(expected: 600_000, held: 5)) { try await short.finish(size: 600_000) }
        #expect(try await store.held(hash) == .absent)
        await #expect(throws: AttachmentStoreError.notFound) { _ = try await store.read(hash, range: 0..<1) }
    }

    private static func anotherHandle(_ harness: AttachmentStoreHarness) async throws {
        let one = try await harness.open()
        let other = try await harness.open()
        let upload = try await one.upload(hash, at: 0)
        try await upload.append(Array(bytes[..<250_000]))
        if harness.sharedAcrossProcesses {
            // The upload open through one handle keeps the hash busy for the other.
            await #expect(throws: AttachmentStoreError.busy) { _ = try await other.upload(hash, at: 0) }
        }
        await upload.close()
        #expect(try await other.held(hash) == .partial(bytes: 250_000))
        let rest = try await other.upload(hash, at: 250_000)
        try await rest.append(Array(bytes[250_000...]))
        try await rest.finish(size: 600_000)
        #expect(try await one.held(hash) == .complete(size: 600_000))
        #expect(try await read(one, hash, 0..<600_000).0 == bytes)
    }

    private static func edges(_ harness: AttachmentStoreHarness) async throws {
        let store = try await harness.open()
        let empty = SHA256.hex(SHA256.hash([]))
        let none = try await store.upload(empty, at: 0)
        try await none.finish(size: 0)
        #expect(try await store.held(empty) == .complete(size: 0))
        #expect(try await read(store, empty, 0..<0).0.isEmpty)
        let exact = Array(bytes[..<harness.chunkLimit])
        let exactHash = SHA256.hex(SHA256.hash(exact))
        let upload = try await store.upload(exactHash, at: 0)
        try await upload.append(exact)
        try await upload.finish(size: Int64(exact.count))
        let (read, largest) = try await read(store, exactHash, 0..<Int64(exact.count))
        #expect(read == exact && largest <= harness.chunkLimit)
    }
}

extension AttachmentStoreScenario {
    /// Uploads `bytes` whole into `store` and finishes them; returns their hash.
    @discardableResult
    public static func put(_ bytes: [UInt8], into store: any AttachmentStore) async throws -> String {
        let sha256 = SHA256.hex(SHA256.hash(bytes))
        let upload = try await store.upload(sha256, at: 0)
        try await upload.append(bytes)
        try await upload.finish(size: Int64(bytes.count))
        return sha256
    }

    private static func collecting(_ harness: AttachmentStoreHarness) async throws {
        let store = try #require(try await harness.open() as? any CollectingAttachmentStore)
        let finished = try await put(Array(bytes[..<1_000]), into: store)
        let partialBytes = Array(bytes[1_000..<3_000])
        let partial = SHA256.hex(SHA256.hash(partialBytes))
        let stopped = try await store.upload(partial, at: 0)
        try await stopped.append(Array(partialBytes[..<500]))
        await stopped.close()
        let openBytes = Array(bytes[3_000..<4_000])
        let opened = SHA256.hex(SHA256.hash(openBytes))
        let open = try await store.upload(opened, at: 0)
        try await open.append(Array(openBytes[..<10]))
        func listed(for seconds: Int64) async throws -> [AttachmentUnchanged] {
            var all: [AttachmentUnchanged] = []
            for sha256 in [finished, partial, opened] { all += try await store.unchanged(for: seconds, prefix: String(sha256.prefix(2))) }
            return all.filter { [finished, partial, opened].contains($0.sha256) }.sorted { $0.sha256 < $1.sha256 }
        }
        // Everything was just written: nothing is unchanged for an hour.
        #expect(try await listed(for: 3_600).isEmpty)
        #expect(try await !store.remove(finished, ifUnchangedFor: 3_600))
        // For no time at all: the finished and the partial one, not the upload still open.
        let expected = [AttachmentUnchanged(sha256: finished, held: .complete(size: 1_000)), AttachmentUnchanged(sha256: partial, held: .partial(bytes: 500))]
        #expect(try await listed(for: 0) == expected.sorted { $0.sha256 < $1.sha256 })
        #expect(try await !store.remove(opened, ifUnchangedFor: 0))
        // Keeping answers whether the hash is finished.
        #expect(try await store.keep(finished))
        #expect(try await !store.keep(partial))
        #expect(try await store.remove(finished, ifUnchangedFor: 0))
        #expect(try await store.remove(partial, ifUnchangedFor: 0))
        #expect(try await store.held(finished) == .absent)
        #expect(try await store.held(partial) == .absent)
        #expect(try await !store.keep(finished))
        // The open upload goes on untouched.
        try await open.append(Array(openBytes[10...]))
        try await open.finish(size: Int64(openBytes.count))
        #expect(try await store.held(opened) == .complete(size: Int64(openBytes.count)))
        // Removed bytes can be uploaded again.
        #expect(try await put(Array(bytes[..<1_000]), into: store) == finished)
        #expect(try await store.held(finished) == .complete(size: 1_000))
    }
}

/// Garbage collection by the server (`RevisionServer.collectAttachments`), written once for
/// every storage and store: the suite gives a server whose `Options.attachments` is `store`,
/// on the schema ``schema``.
public enum AttachmentCollectionScenario {
    public static let schema = try! Schema([Entity("photos", fields: [Field("caption", .text), Field("image", .attachment), Field("thumb", .attachment)])])

    public static func run(server: RevisionServer, store: any AttachmentStore) async throws {
        let kept = try await AttachmentStoreScenario.put(Array(AttachmentStoreScenario.bytes[..<2_000]), into: store)
        let thumb = try await AttachmentStoreScenario.put(Array(AttachmentStoreScenario.bytes[2_000..<2_500]), into: store)
        let orphan = try await AttachmentStoreScenario.put(Array(AttachmentStoreScenario.bytes[5_000..<8_000]), into: store)
        let ofDeleted = try await AttachmentStoreScenario.put(Array(AttachmentStoreScenario.bytes[9_000..<9_100]), into: store)
        let partial = try await store.upload(SHA256.hex(SHA256.hash([1, 2, 3])), at: 0)
        try await partial.append([1])
        await partial.close()
        func reference(_ sha256: String, _ size: Int) -> Value { .text("sha256:\(sha256);\(size);image/jpeg") }
        let created = try await server.handle(SyncRequest(maxRevision: 0, changeSets: [
            Send.changeSet(Send.create("photos", -1, [.text("a"), reference(kept, 2_000), .null])),
            Send.changeSet(Send.create("photos", -2, [.text("b"), .null, reference(thumb, 500)])),
            Send.changeSet(Send.create("photos", -3, [.text("c"), reference(ofDeleted, 100), .null])),
        ]))
        #expect(created.changeSets.count == 3 && created.changeSets.allSatisfy { $0.refused.isEmpty && $0.conflict != true })
        let third = try #require(created.changeSets.last?.entities.first?.create.first)
        let deleted = try await server.handle(SyncRequest(maxRevision: created.maxRevision, changeSets: [Send.changeSet(
            Send.delete("photos", third, revision: created.maxRevision, width: 3))]))
        #expect(deleted.changeSets.first?.conflict != true)
        // A grace period of an hour: everything is too recent.
        let none = try await server.collectAttachments(unusedFor: 3_600)
        #expect(none.examined == 0 && none.removedFinished == 0)
        let dry = try await server.collectAttachments(unusedFor: 0, dryRun: true)
        #expect(dry.examined == 5 && dry.referenced == 2 && dry.removedFinished == 2 && dry.removedPartial == 1)
        #expect(dry.bytesRemoved == 3_000 + 100 + 1)
        #expect(try await store.held(orphan) == .complete(size: 3_000))
        let report = try await server.collectAttachments(unusedFor: 0)
        #expect(!report.dryRun && report.examined == 5 && report.referenced == 2)
        #expect(report.removedFinished == 2 && report.removedPartial == 1 && report.bytesRemoved == 3_101)
        #expect(try await store.held(kept) == .complete(size: 2_000))
        #expect(try await store.held(thumb) == .complete(size: 500))
        #expect(try await store.held(orphan) == .absent)
        #expect(try await store.held(ofDeleted) == .absent)
        // A record that names removed bytes is refused until they are uploaded again.
        let late = try await server.handle(SyncRequest(maxRevision: deleted.maxRevision, changeSets: [Send.changeSet(
            Send.create("photos", -4, [.text("d"), reference(orphan, 3_000), .null]))]))
        #expect(late.changeSets.first?.refused.first?.code == RevisionServer.attachmentMissingCode)
    }
}

/// How a store's suite gives the scenarios its store.
public struct AttachmentStoreHarness {
    /// A handle on the store's bytes; each call another one on the same bytes, as another
    /// server process would open it.
    public var open: () async throws -> any AttachmentStore
    /// The largest chunk a read may return.
    public var chunkLimit: Int
    /// Whether an upload open through one handle keeps the hash busy for the others (a
    /// store that several processes share).
    public var sharedAcrossProcesses: Bool

    public init(chunkLimit: Int, sharedAcrossProcesses: Bool, open: @escaping () async throws -> any AttachmentStore) {
        self.open = open
        self.chunkLimit = chunkLimit
        self.sharedAcrossProcesses = sharedAcrossProcesses
    }
}
