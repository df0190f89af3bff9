import FieldMerge
import FieldMergeServer
import FieldMergeServerSQLite
import FieldMergeTestSupport
import Foundation
import Synchronization
import Testing

/// The directory store: every `AttachmentStoreScenario`, and where its files go (partial
/// uploads apart, finished ones renamed into place, nothing left of a mismatch).
@Suite struct DirectoryAttachmentStoreTests {
    func withDirectory(_ body: (String) async throws -> Void) async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("store-\(UUID().uuidString).sqlite").path
        defer { try? FileManager.default.removeItem(atPath: path + ".attachments") }
        try await body(path)
    }

    @Test(arguments: AttachmentStoreScenario.allCases)
    func scenario(_ scenario: AttachmentStoreScenario) async throws {
        try await withDirectory { path in
            try await scenario.run(AttachmentStoreHarness(chunkLimit: DirectoryAttachmentStore.chunkSize, sharedAcrossProcesses: false) {
                try DirectoryAttachmentStore(besideDatabase: path)
            })
        }
    }

    @Test func filesArePartialApart_finishedByTheirFirstTwoDigits_andNothingIsLeftOfAMismatch() async throws {
        try await withDirectory { path in
            let store = try DirectoryAttachmentStore(besideDatabase: path)
            #expect(store.directory == path + ".attachments")
            let (bytes, hash) = (AttachmentStoreScenario.bytes, AttachmentStoreScenario.hash)
            let upload = try await store.upload(hash, at: 0)
            try await upload.append(Array(bytes[..<1_000]))
            #expect(FileManager.default.fileExists(atPath: "\(store.directory)/partial/\(hash)"))
            try await upload.append(Array(bytes[1_000...]))
            try await upload.finish(size: Int64(bytes.count))
            #expect(FileManager.default.fileExists(atPath: "\(store.directory)/\(hash.prefix(2))/\(hash)"))
            #expect(!FileManager.default.fileExists(atPath: "\(store.directory)/partial/\(hash)"))
            let other = SHA256.hex(SHA256.hash([1, 2, 3]))
            let wrong = try await store.upload(other, at: 0)
            try await wrong.append([3, 2, 1])
            await #expect(throws: AttachmentStoreError.self) { try await wrong.finish(size: 3) }
            let files = try FileManager.default.subpathsOfDirectory(atPath: store.directory).filter { !$0.hasSuffix("partial") }
            #expect(files == ["\(hash.prefix(2))", "\(hash.prefix(2))/\(hash)"], "\(files)")
        }
    }

    /// An upload in pieces, one upload each (as `HTTPTransport` sends them): each piece goes
    /// on from the hash the one before left, so every byte is hashed once, not the bytes of
    /// all earlier pieces again; a store opened afresh (a restart) reads them once; a
    /// removed partial file takes its kept hash with it.
    @Test func anUploadInPieces_hashesEachByteOnce() async throws {
        try await withDirectory { path in
            let fed = CountingDigest.Counter()
            let hashing = CountingDigest.hashing(fed)
            let store = try DirectoryAttachmentStore(besideDatabase: path, hashing: hashing)
            let (bytes, hash) = (AttachmentStoreScenario.bytes, AttachmentStoreScenario.hash)
            let pieces = stride(from: 0, to: bytes.count, by: 1_000).map { $0..<min($0 + 1_000, bytes.count) }
            #expect(pieces.count > 3)
            for piece in pieces.dropLast() {
                let upload = try await store.upload(hash, at: Int64(piece.lowerBound))
                try await upload.append(Array(bytes[piece]))
                await upload.close()
            }
            #expect(fed.value == pieces.last!.lowerBound)
            // Opened afresh, the store reads what is held once, then goes on.
            let restarted = try DirectoryAttachmentStore(besideDatabase: path, hashing: hashing)
            let last = try await restarted.upload(hash, at: Int64(pieces.last!.lowerBound))
            try await last.append(Array(bytes[pieces.last!]))
            try await last.finish(size: Int64(bytes.count))
            #expect(fed.value == pieces.last!.lowerBound * 2 + pieces.last!.count)
            #expect(try await restarted.held(hash) == .complete(size: Int64(bytes.count)))
            // A partial file removed (garbage collection) leaves no hash to go on from.
            let other = SHA256.hex(SHA256.hash(Array(bytes[..<10])))
            let first = try await store.upload(other, at: 0)
            try await first.append(Array(bytes[..<5]))
            await first.close()
            #expect(try await store.remove(other, ifUnchangedFor: 0))
            let before = fed.value
            let again = try await store.upload(other, at: 0)
            try await again.append(Array(bytes[..<10]))
            try await again.finish(size: 10)
            #expect(fed.value == before + 10)
        }
    }
}
