import FieldMergeSync
import FieldMergeProtocol
import Foundation
import Testing

@Suite struct GzipTests {
    private func sample(_ count: Int, seed: UInt64 = 5) -> [UInt8] {
        var generator = WireRandom(seed: seed)
        let words = ["\"title\":", "\"notes\":", "true", "false", "1700000000", ",", "{", "}", "reminder "]
        var bytes: [UInt8] = []
        while bytes.count < count {
            if generator.below(4) == 0 {
                bytes.append(UInt8(truncatingIfNeeded: generator.next()))
            } else {
                bytes += Array(words[generator.below(words.count)].utf8)
            }
        }
        return Array(bytes.prefix(count))
    }

    @Test(arguments: [0, 1, 3, 6, 9] as [Int32])
    func compressThenDecompress_returnsTheInput(level: Int32) throws {
        for input in [[], [0x41], sample(1_000), sample(300_000, seed: UInt64(level))] {
            let compressed = Gzip.compress(input, level: level)
            #expect(compressed.starts(with: [0x1F, 0x8B, 0x08]), "a gzip header")
            #expect(try Gzip.decompress(compressed, limit: input.count) == input)
        }
    }

    @Test func defaultLevel_compressesJSONSeveralFold() async throws {
        let json = Array(String(repeating: #"{"title":"Buy milk","isCompleted":false,"priority":2},"#, count: 2_000).utf8)
        let compressed = Gzip.compress(json)
        #expect(compressed.count * 20 < json.count)
        #expect(try Gzip.decompress(compressed, limit: json.count) == json)
    }

    /// From 1 MiB on, a body is deflated in pieces on several cores, into one gzip member.
    @Test(arguments: [1, 6] as [Int32])
    func largeBody_comesBackWhole(level: Int32) throws {
        let input = sample(2_600_000, seed: 11)
        let compressed = Gzip.compress(input, level: level)
        #expect(compressed.starts(with: [0x1F, 0x8B, 0x08]), "a gzip header")
        let size = compressed.suffix(4).reversed().reduce(0) { $0 << 8 | Int($1) }
        #expect(size == input.count, "the trailer's ISIZE")
        #expect(compressed.count < input.count * 3 / 4)
        #expect(try Gzip.decompress(compressed, limit: input.count) == input)
    }

    /// System gzip checks the CRC-32 and the length, also of a body deflated in pieces.
    @Test(arguments: [50_000, 2_600_000])
    func outputIsReadBySystemGzip_andSystemGzipIsReadBack(size: Int) async throws {
        let gzip = URL(fileURLWithPath: "/usr/bin/gzip")
        guard FileManager.default.isExecutableFile(atPath: gzip.path) else { return }
        let input = sample(size)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("wire-gzip-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("body.gz")
        try Data(Gzip.compress(input)).write(to: file)
        #expect(try run(gzip.path, ["-d", file.path]) == 0)
        let plain = folder.appendingPathComponent("body")
        #expect(try Data(contentsOf: plain) == Data(input))
        #expect(try run(gzip.path, ["-9", plain.path]) == 0)
        #expect(try Gzip.decompress(Array(Data(contentsOf: file)), limit: input.count) == input)
    }

    /// Runs `path` with `arguments` and returns its raw wait status (0: exited with 0).
    /// posix_spawn, not Foundation's Process, whose `run()` leaves a report for
    /// LeakSanitizer (Specs/reliability.md, section 2).
    private func run(_ path: String, _ arguments: [String]) throws -> Int32 {
        let argv = ([path] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid = pid_t()
        let spawned = posix_spawn(&pid, path, nil, nil, argv, environ)
        guard spawned == 0 else { throw POSIXError(POSIXErrorCode(rawValue: spawned) ?? .EIO) }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 {
            guard errno == EINTR else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        }
        return status
    }

    @Test func hundredMegabyteBomb_stopsAtTheLimitQuickly() async throws {
        let bomb = Gzip.compress([UInt8](repeating: 0, count: 100 << 20), level: 9)
        #expect(bomb.count < 200_000)
        let clock = ContinuousClock()
        let start = clock.now
        #expect(throws: WireError.self) { _ = try Gzip.decompress(bomb, limit: 1 << 20) }
        #expect(clock.now - start < .seconds(1))
        do {
            _ = try Gzip.decompress(bomb, limit: 1 << 20)
        } catch {
            #expect(error.code == .gzipTooLarge)
        }
        // Exactly at the limit is fine; one byte less is not.
        let exact = Gzip.compress([UInt8](repeating: 7, count: 4_096))
        #expect(try Gzip.decompress(exact, limit: 4_096).count == 4_096)
        #expect(throws: WireError.self) { _ = try Gzip.decompress(exact, limit: 4_095) }
    }

    @Test func lyingSizeTrailer_doesNotOverAllocateOrMisread() async throws {
        var stream = Gzip.compress(sample(10_000))
        // ISIZE claims 4 GB: the hint is refused, decompression still fails only on the CRC check
        // of a changed trailer, which is what gzip does.
        stream.replaceSubrange((stream.count - 4)..., with: [0xFF, 0xFF, 0xFF, 0xFF])
        let error = try #require(throws: WireError.self) { try Gzip.decompress(stream, limit: 1 << 20) }
        #expect(error.code == .gzipCorrupt)
    }

    @Test func everyTruncation_isGzipTruncated() async throws {
        let input = sample(20_000)
        let compressed = Gzip.compress(input)
        for length in 0..<compressed.count {
            do {
                _ = try Gzip.decompress(Array(compressed[..<length]), limit: input.count)
                Issue.record("a stream cut at \(length) of \(compressed.count) bytes decompressed")
            } catch {
                #expect(error.code == .gzipTruncated, "cut at \(length)")
            }
        }
    }

    @Test func corruptStreams_areGzipCorrupt() async throws {
        let input = sample(20_000)
        let compressed = Gzip.compress(input)
        func code(_ bytes: [UInt8]) -> WireError.Code? {
            do {
                _ = try Gzip.decompress(bytes, limit: 1 << 20)
                return nil
            } catch {
                return error.code
            }
        }
        #expect(code(Array("not gzip at all, just text".utf8)) == .gzipCorrupt)
        #expect(code([0x1F, 0x8B, 0x09] + compressed.dropFirst(3)) == .gzipCorrupt, "unknown method")
        var crc = compressed
        crc[crc.count - 6] ^= 0x01
        #expect(code(crc) == .gzipCorrupt, "CRC-32 mismatch")
        var size = compressed
        size[size.count - 3] ^= 0x01
        #expect(code(size) == .gzipCorrupt, "length mismatch")
        #expect(code(compressed + Array("trailing".utf8)) == .gzipCorrupt, "trailing garbage")
        #expect(code(compressed + [0]) == .gzipCorrupt, "a trailing zero byte")
        // Flipping bytes in the deflate data: an error, never a different output. (A flip
        // in the padding bits after the last block changes nothing, and inflates alike.)
        var generator = WireRandom(seed: 3)
        var errors = 0
        for _ in 0..<200 {
            var damaged = compressed
            let position = 10 + generator.below(compressed.count - 18)
            damaged[position] ^= UInt8(truncatingIfNeeded: 1 + generator.below(255))
            do {
                let output = try Gzip.decompress(damaged, limit: 1 << 20)
                #expect(output == input, "flip at \(position) inflated to something else")
            } catch {
                #expect(error.code == .gzipCorrupt || error.code == .gzipTruncated, "flip at \(position): \(error)")
                errors += 1
            }
        }
        #expect(errors >= 190)
    }

    @Test func concatenatedMembers_decompressToTheConcatenation() async throws {
        let first = sample(5_000, seed: 1), second = sample(7_000, seed: 2)
        let stream = Gzip.compress(first) + Gzip.compress(second, level: 1)
        #expect(try Gzip.decompress(stream, limit: 12_000) == first + second)
        #expect(throws: WireError.self) { _ = try Gzip.decompress(stream, limit: 11_999) }
        #expect(throws: WireError.self) { _ = try Gzip.decompress(stream + [0x1F], limit: 20_000) }
    }
}
