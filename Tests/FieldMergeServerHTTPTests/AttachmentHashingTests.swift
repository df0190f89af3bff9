import FieldMerge
import FieldMergeCryptoHashing
import FieldMergeServer
import FieldMergeServerSQLite
import FieldMergeTestSupport
import Foundation
import Testing

/// `serve`'s attachment hashing (swift-crypto) against the core's SHA-256, and the directory
/// store's scenarios with it.
@Suite struct AttachmentHashingTests {
    @Test(arguments: [0, 1, 55, 56, 63, 64, 65, 1_000, 300_001])
    func cryptoAndPortable_agree_whateverThePieces(_ size: Int) {
        let bytes = (0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 7) }
        var fast = AttachmentHashing.crypto.digest()
        var plain = AttachmentHashing.portable.digest()
        var at = 0
        var piece = 1
        while at < size {
            let end = min(size, at + piece)
            fast.update(Array(bytes[at..<end]))
            plain.update(Array(bytes[at..<end]))
            at = end
            piece = piece * 3 + 1
        }
        let expected = SHA256.hex(SHA256.hash(bytes))
        #expect(fast.finalizeHex() == expected)
        #expect(plain.finalizeHex() == expected)
    }

    @Test(arguments: AttachmentStoreScenario.allCases)
    func directoryStoreScenarios_withCryptoHashing(_ scenario: AttachmentStoreScenario) async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("crypto-\(UUID().uuidString).sqlite").path
        defer { try? FileManager.default.removeItem(atPath: path + ".attachments") }
        try await scenario.run(AttachmentStoreHarness(chunkLimit: DirectoryAttachmentStore.chunkSize, sharedAcrossProcesses: false) {
            try DirectoryAttachmentStore(besideDatabase: path, hashing: .crypto)
        })
    }
}
