import FieldMerge
import FieldMergeServer
import FieldMergeServerSQLite
import Foundation
import Testing

/// The directory store on its own: partial uploads apart, finished ones by rename after the
/// hash matched, one upload of a hash at a time, reads in bounded chunks.
@Suite struct DirectoryAttachmentStoreTests {
    func withStore(_ body: (DirectoryAttachmentStore) async throws -> Void) async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("store-\(UUID().uuidString).sqlite").path
        defer { try? FileManager.default.removeItem(atPath: path + ".attachments") }
        let store = try DirectoryAttachmentStore(besideDatabase: path)
        #expect(store.directory == path + ".attachments")
        try await body(store)
    }

    static let bytes: [UInt8] = (0..<600_000).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ $0 >> 9) }
    static let hash = SHA256.hex(SHA256.hash(bytes))

    @Test func piecesAppended_thenFinished_readBackInBoundedChunks() async throws {
        try await withStore { store in
            #expect(try await store.held(Self.hash) == .absent)
            let first = try await store.upload(Self.hash, at: 0)
            try await first.append(Array(Self.bytes[..<100_000]))
            await first.close()
            #expect(try await store.held(Self.hash) == .partial(bytes: 100_000))
            await #expect(throws: AttachmentStoreError.notFound) { _ = try await store.read(Self.hash, range: 0..<1) }
            let second = try await store.upload(Self.hash, at: 100_000)
            // One upload of a hash at a time.
            await #expect(throws: AttachmentStoreError.busy) { _ = try await store.upload(Self.hash, at: 100_000) }
            try await second.append(Array(Self.bytes[100_000...]))
            #expect(await second.held == 600_000)
            try await second.finish(size: 600_000)
            #expect(try await store.held(Self.hash) == .complete(size: 600_000))
            await #expect(throws: AttachmentStoreError.complete(size: 600_000)) { _ = try await store.upload(Self.hash, at: 0) }
            var read: [UInt8] = []
            var largest = 0
            for try await chunk in try await store.read(Self.hash, range: 10..<599_990) {
                largest = max(largest, chunk.count)
                read += chunk
            }
            #expect(read == Array(Self.bytes[10..<599_990]))
            #expect(largest <= DirectoryAttachmentStore.chunkSize)
            #expect(!FileManager.default.fileExists(atPath: "\(store.directory)/partial/\(Self.hash)"))
        }
    }

    @Test func aWrongOffset_namesWhatIsHeld() async throws {
        try await withStore { store in
            let upload = try await store.upload(Self.hash, at: 0)
            try await upload.append(Array(Self.bytes[..<10]))
            await upload.close()
            await #expect(throws: AttachmentStoreError.offsetMismatch(held: 10)) { _ = try await store.upload(Self.hash, at: 0) }
            await #expect(throws: AttachmentStoreError.offsetMismatch(held: 10)) { _ = try await store.upload(Self.hash, at: 11) }
            // A refused upload does not keep the hash busy.
            let resumed = try await store.upload(Self.hash, at: 10)
            await resumed.close()
        }
    }

    @Test func aMismatch_removesThePartialBytes_andNothingIsReadable() async throws {
        try await withStore { store in
            let wrong = try await store.upload(Self.hash, at: 0)
            try await wrong.append(Array(Self.bytes.reversed()))
            await #expect(throws: AttachmentStoreError.self) { try await wrong.finish(size: 600_000) }
            #expect(try await store.held(Self.hash) == .absent)
            let short = try await store.upload(Self.hash, at: 0)
            try await short.append(Array(Self.bytes[..<5]))
            await #expect(throws: AttachmentStoreError.sizeMismatch(expected: 600_000, held: 5)) { try await short.finish(size: 600_000) }
            #expect(try await store.held(Self.hash) == .absent)
            let files = try FileManager.default.subpathsOfDirectory(atPath: store.directory).filter { !$0.hasSuffix("partial") }
            #expect(files.isEmpty, "\(files)")
        }
    }
}
