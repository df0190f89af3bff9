import FieldMerge
import FieldMergeServer
import FieldMergeServerSQLite
import FieldMergeTestSupport
import Foundation
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
}
