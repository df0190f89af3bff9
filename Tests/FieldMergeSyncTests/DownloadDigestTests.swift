import FieldMerge
import FieldMergeFiles
@testable import FieldMergeSync
import Foundation
import Testing

/// ``DownloadDigest``: a download's hash from the pieces a transport hands on, from the file
/// where it hands on none, and from both; always of what the file holds.
@Suite struct DownloadDigestTests {
    static let bytes = AttachmentWorld.random(300_000, seed: 7)
    static let whole = SHA256.hex(SHA256.hash(bytes))

    /// A file holding `bytes[..<prefix]` in a new directory, removed after `body`.
    static func withPartial<T>(_ prefix: Int, _ body: (String, Int32) throws -> T) throws -> T {
        let directory = try AttachmentFiles.makeTemporaryDirectory(prefix: "download-digest-")
        defer { AttachmentFiles.removeTree(directory) }
        let path = directory + "/partial"
        let descriptor = try AttachmentFiles.openForAppending(path)
        defer { AttachmentFiles.close(descriptor) }
        try AttachmentFiles.write(descriptor, path: path, Array(bytes[..<prefix]))
        return try body(path, descriptor)
    }

    /// Appends `range` of the bytes to the file and hands the same piece to the digest.
    static func arrive(_ range: Range<Int>, _ path: String, _ descriptor: Int32, _ digest: DownloadDigest) throws {
        let piece = Array(bytes[range])
        try AttachmentFiles.write(descriptor, path: path, piece)
        piece.withUnsafeBytes { digest.absorb($0) }
    }

    @Test func aResumedDownload_readsBackWhatWasThere_thenHashesThePiecesHandedOn() throws {
        let got = try Self.withPartial(100_000) { path, descriptor in
            let digest = DownloadDigest(path: path, hashing: .portable, start: 100_000)
            for start in stride(from: 100_000, to: 300_000, by: 64_000) {
                try Self.arrive(start..<min(start + 64_000, 300_000), path, descriptor, digest)
                digest.advance(to: Int64(min(start + 64_000, 300_000)))
            }
            return try digest.finish()
        }
        #expect(got.sha256 == Self.whole && got.size == 300_000)
    }

    @Test func aPieceAReportAlreadyReadBack_isHashedOnce() throws {
        let got = try Self.withPartial(0) { path, descriptor in
            let digest = DownloadDigest(path: path, hashing: .portable)
            // The first piece reaches the file and a report reads it back before it is
            // handed on; the second is handed on before its report.
            try AttachmentFiles.write(descriptor, path: path, Array(Self.bytes[..<120_000]))
            digest.advance(to: 120_000)
            Self.bytes[..<120_000].withUnsafeBytes { digest.absorb($0) }
            try Self.arrive(120_000..<300_000, path, descriptor, digest)
            return try digest.finish()
        }
        #expect(got.sha256 == Self.whole && got.size == 300_000)
    }

    @Test func aPieceHandedOnThatTheFileNeverGot_failsTheCheck() throws {
        let got = try Self.withPartial(0) { path, descriptor in
            let digest = DownloadDigest(path: path, hashing: .portable)
            try Self.arrive(0..<200_000, path, descriptor, digest)
            // Handed on, never written: the digest covers 300,000 bytes, the file 200,000.
            Self.bytes[200_000...].withUnsafeBytes { digest.absorb($0) }
            return try digest.finish()
        }
        #expect(got.size == 200_000)
        #expect(got.sha256 != SHA256.hex(SHA256.hash(Array(Self.bytes[..<200_000]))))
    }

    @Test func withoutPieces_theFileIsReadBack() throws {
        let got = try Self.withPartial(300_000) { path, _ in
            let digest = DownloadDigest(path: path, hashing: .portable)
            digest.advance(to: 150_000)
            return try digest.finish()
        }
        #expect(got.sha256 == Self.whole && got.size == 300_000)
    }
}
