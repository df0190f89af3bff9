import FieldMerge
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

    public var testDescription: String { rawValue }

    public func run(_ harness: AttachmentStoreHarness) async throws {
        switch self {
        case .piecesAppendedThenFinishedAreReadBackInBoundedChunks: try await Self.pieces(harness)
        case .aWrongOffsetNamesWhatIsHeld: try await Self.wrongOffset(harness)
        case .aMismatchRemovesTheBytesAndNothingIsReadable: try await Self.mismatch(harness)
        case .anotherHandleResumesAClosedUploadAndReadsItOnceFinished: try await Self.anotherHandle(harness)
        case .anEmptyAttachmentAndOneOfExactlyOneChunk: try await Self.edges(harness)
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
