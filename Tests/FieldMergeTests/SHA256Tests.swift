import Foundation
import Testing
import FieldMerge

/// The core's SHA-256 (moved from the workload module for attachments) against the NIST examples (FIPS 180-4) and the system's `sha256sum`.
@Suite struct SHA256Tests {
    @Test(arguments: [
        ("", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"),
        ("abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"),
        ("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1"),
    ])
    func nistExamples(_ message: String, _ digest: String) {
        #expect(SHA256.hex(SHA256.hash(Array(message.utf8))) == digest)
    }

    @Test func oneMillionAs_fedInUnevenPieces() {
        let expected = "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0"
        let whole = [UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000)
        #expect(SHA256.hex(SHA256.hash(whole)) == expected)
        // Pieces that straddle the 64-byte blocks: 1, 63, 64, 65, 1000 bytes, ...
        var hasher = SHA256.Hasher()
        var offset = 0, step = 0
        let sizes = [1, 63, 64, 65, 1000, 7, 4096]
        while offset < whole.count {
            let end = min(whole.count, offset + sizes[step % sizes.count])
            hasher.update(whole[offset..<end])
            offset = end
            step += 1
        }
        #expect(SHA256.hex(hasher.finalize()) == expected)
    }

    @Test func aNonContiguousSequence_hashesLikeItsBytes() {
        let bytes = (0..<10_000).map { UInt8(truncatingIfNeeded: $0 &* 31) }
        #expect(SHA256.hash(bytes.lazy.map { $0 }) == SHA256.hash(bytes))
    }

    @Test func aRandomFile_matchesSha256sum() throws {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<300_001).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("sha256-\(UUID().uuidString)")
        try Data(bytes).write(to: url)
        defer { try? FileManager.default.removeItem(at: url) }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["sha256sum", url.path]
        let pipe = Pipe()
        process.standardOutput = pipe
        try process.run()
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
        let expected = String(decoding: output, as: UTF8.self).split(separator: " ").first.map(String.init)
        #expect(expected?.count == 64)
        #expect(SHA256.hex(SHA256.hash(bytes)) == expected)
    }
}
