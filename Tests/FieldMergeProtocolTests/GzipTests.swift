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

    @Test(arguments: Gzip.engines, [0, 1, 3, 6, 9] as [Int32])
    func compressThenDecompress_returnsTheInput(engine: Gzip.Engine, level: Int32) throws {
        for input in [[], [0x41], sample(1_000), sample(300_000, seed: UInt64(level))] {
            let compressed = Gzip.compress(input, level: level, engine: engine)
            #expect(compressed.starts(with: [0x1F, 0x8B, 0x08]), "a gzip header")
            #expect(try Gzip.decompress(compressed, limit: input.count, engine: engine) == input)
        }
    }

    @Test(arguments: Gzip.engines)
    func defaultLevel_compressesJSONSeveralFold(engine: Gzip.Engine) async throws {
        let json = Array(String(repeating: #"{"title":"Buy milk","isCompleted":false,"priority":2},"#, count: 2_000).utf8)
        let compressed = Gzip.compress(json, engine: engine)
        #expect(compressed.count * 20 < json.count)
        #expect(try Gzip.decompress(compressed, limit: json.count, engine: engine) == json)
    }

    /// From 1 MiB on, a body is deflated in pieces on several cores, into one gzip member.
    @Test(arguments: Gzip.engines, [1, 6] as [Int32])
    func largeBody_comesBackWhole(engine: Gzip.Engine, level: Int32) throws {
        let input = sample(2_600_000, seed: 11)
        let compressed = Gzip.compress(input, level: level, engine: engine)
        #expect(compressed.starts(with: [0x1F, 0x8B, 0x08]), "a gzip header")
        let size = compressed.suffix(4).reversed().reduce(0) { $0 << 8 | Int($1) }
        #expect(size == input.count, "the trailer's ISIZE")
        #expect(compressed.count < input.count * 3 / 4)
        #expect(try Gzip.decompress(compressed, limit: input.count, engine: engine) == input)
    }

    /// System gzip checks the CRC-32 and the length, also of a body deflated in pieces.
    @Test(arguments: Gzip.engines, [50_000, 2_600_000])
    func outputIsReadBySystemGzip_andSystemGzipIsReadBack(engine: Gzip.Engine, size: Int) async throws {
        let gzip = URL(fileURLWithPath: "/usr/bin/gzip")
        guard FileManager.default.isExecutableFile(atPath: gzip.path) else { return }
        let input = sample(size)
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("wire-gzip-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = folder.appendingPathComponent("body.gz")
        try Data(Gzip.compress(input, engine: engine)).write(to: file)
        #expect(try run(gzip.path, ["-d", file.path]) == 0)
        let plain = folder.appendingPathComponent("body")
        #expect(try Data(contentsOf: plain) == Data(input))
        #expect(try run(gzip.path, ["-9", plain.path]) == 0)
        #expect(try Gzip.decompress(Array(Data(contentsOf: file)), limit: input.count, engine: engine) == input)
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

    @Test(arguments: Gzip.engines)
    func hundredMegabyteBomb_stopsAtTheLimitQuickly(engine: Gzip.Engine) async throws {
        let bomb = Gzip.compress([UInt8](repeating: 0, count: 100 << 20), level: 9, engine: engine)
        #expect(bomb.count < 200_000)
        let clock = ContinuousClock()
        let start = clock.now
        #expect(throws: WireError.self) { _ = try Gzip.decompress(bomb, limit: 1 << 20, engine: engine) }
        #expect(clock.now - start < .seconds(1))
        do {
            _ = try Gzip.decompress(bomb, limit: 1 << 20, engine: engine)
        } catch {
            #expect(error.code == .gzipTooLarge)
        }
        // Exactly at the limit is fine; one byte less is not.
        let exact = Gzip.compress([UInt8](repeating: 7, count: 4_096), engine: engine)
        #expect(try Gzip.decompress(exact, limit: 4_096, engine: engine).count == 4_096)
        #expect(throws: WireError.self) { _ = try Gzip.decompress(exact, limit: 4_095, engine: engine) }
    }

    @Test(arguments: Gzip.engines)
    func lyingSizeTrailer_doesNotOverAllocateOrMisread(engine: Gzip.Engine) async throws {
        var stream = Gzip.compress(sample(10_000), engine: engine)
        // ISIZE claims 4 GB: the hint is refused, decompression still fails only on the CRC check
        // of a changed trailer, which is what gzip does.
        stream.replaceSubrange((stream.count - 4)..., with: [0xFF, 0xFF, 0xFF, 0xFF])
        let error = try #require(throws: WireError.self) { try Gzip.decompress(stream, limit: 1 << 20, engine: engine) }
        #expect(error.code == .gzipCorrupt)
    }

    @Test(arguments: Gzip.engines)
    func everyTruncation_isGzipTruncated(engine: Gzip.Engine) async throws {
        let input = sample(20_000)
        let compressed = Gzip.compress(input, engine: engine)
        for length in 0..<compressed.count {
            do {
                _ = try Gzip.decompress(Array(compressed[..<length]), limit: input.count, engine: engine)
                Issue.record("a stream cut at \(length) of \(compressed.count) bytes decompressed")
            } catch {
                #expect(error.code == .gzipTruncated, "cut at \(length)")
            }
        }
    }

    @Test(arguments: Gzip.engines)
    func corruptStreams_areGzipCorrupt(engine: Gzip.Engine) async throws {
        let input = sample(20_000)
        let compressed = Gzip.compress(input, engine: engine)
        func code(_ bytes: [UInt8]) -> WireError.Code? {
            do {
                _ = try Gzip.decompress(bytes, limit: 1 << 20, engine: engine)
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
                let output = try Gzip.decompress(damaged, limit: 1 << 20, engine: engine)
                #expect(output == input, "flip at \(position) inflated to something else")
            } catch {
                #expect(error.code == .gzipCorrupt || error.code == .gzipTruncated, "flip at \(position): \(error)")
                errors += 1
            }
        }
        #expect(errors >= 190)
    }

    @Test(arguments: Gzip.engines)
    func concatenatedMembers_decompressToTheConcatenation(engine: Gzip.Engine) async throws {
        let first = sample(5_000, seed: 1), second = sample(7_000, seed: 2)
        let stream = Gzip.compress(first, engine: engine) + Gzip.compress(second, level: 1, engine: engine)
        #expect(try Gzip.decompress(stream, limit: 12_000, engine: engine) == first + second)
        #expect(throws: WireError.self) { _ = try Gzip.decompress(stream, limit: 11_999, engine: engine) }
        #expect(throws: WireError.self) { _ = try Gzip.decompress(stream + [0x1F], limit: 20_000, engine: engine) }
    }

    /// Each engine reads what the other writes: one member or several, small and large.
    @Test func engines_readEachOther() async throws {
        let inputs = [[], sample(1_000), sample(2_600_000, seed: 7)]
        for writer in Gzip.engines {
            for reader in Gzip.engines {
                for input in inputs {
                    let stream = Gzip.compress(input, engine: writer)
                    #expect(try Gzip.decompress(stream, limit: input.count, engine: reader) == input, "\(writer) → \(reader)")
                }
                let members = Gzip.compress(inputs[2], engine: writer) + Gzip.compress(inputs[1], engine: writer)
                #expect(try Gzip.decompress(members, limit: 2_601_000, engine: reader) == inputs[2] + inputs[1])
            }
        }
    }

    /// A stream either engine cannot inflate whole fails with the same error from both:
    /// truncations, flipped bytes, limits one byte short, trailing bytes.
    @Test func engines_failAlike() async throws {
        let input = sample(40_000, seed: 9)
        let compressed = Gzip.compress(input) + Gzip.compress(sample(3_000, seed: 10))
        func outcome(_ bytes: [UInt8], limit: Int, _ engine: Gzip.Engine) -> String {
            do { return "inflated \(try Gzip.decompress(bytes, limit: limit, engine: engine).hashValue)" } catch { return "\(error)" }
        }
        var generator = WireRandom(seed: 12)
        var streams: [([UInt8], Int)] = [(compressed, 43_000), (compressed, 42_999), (compressed + [0x1F], 50_000)]
        for _ in 0..<300 {
            var damaged = compressed
            let position = generator.below(compressed.count)
            damaged[position] ^= UInt8(truncatingIfNeeded: 1 + generator.below(255))
            streams.append((damaged, 50_000))
            streams.append((Array(compressed.prefix(generator.below(compressed.count))), 50_000))
        }
        var failures = 0
        for (stream, limit) in streams {
            let outcomes = Gzip.engines.map { outcome(stream, limit: limit, $0) }
            #expect(Set(outcomes).count == 1, "\(outcomes)")
            if !outcomes[0].hasPrefix("inflated") { failures += 1 }
        }
        #expect(failures >= 500)
    }

    /// The optional parts of a member's header (RFC 1952 2.3.1: FEXTRA, FNAME, FCOMMENT,
    /// FHCRC) get one verdict whatever the engine: a member with a right header CRC-16, extra
    /// field, name or comment inflates; a wrong header CRC, an extra field or a name running
    /// past the end, or a reserved flag fails with the same error from both. libdeflate does
    /// not check the header CRC; zlib does: a wrong one inflated with libdeflate alone
    /// (found by the gzip fuzz target).
    @Test func optionalHeaderParts_getOneVerdict() async throws {
        let input = sample(3_000, seed: 21)
        let plain = Gzip.compress(input, engine: .zlib)
        let body = Array(plain.dropFirst(10))
        func member(flags: UInt8, _ optional: [UInt8], headerCRC: ((UInt32) -> UInt32)? = nil) -> [UInt8] {
            var header = Array(plain.prefix(10))
            header[3] = flags
            header += optional
            if let headerCRC {
                let crc = headerCRC(Self.crc32(header))
                header += [UInt8(crc & 0xFF), UInt8(crc >> 8 & 0xFF)]
            }
            return header + body
        }
        func outcomes(_ bytes: [UInt8]) -> [String] {
            Gzip.engines.map { engine in
                do throws(WireError) {
                    return try Gzip.decompress(bytes, limit: 1 << 20, engine: engine) == input ? "input" : "other bytes"
                } catch {
                    return "\(error.code)"
                }
            }
        }
        let extra: [UInt8] = [6, 0, 0x41, 0x42, 2, 0, 0x01, 0x02]  // XLEN 6: one subfield "AB" of 2 bytes
        let cases: [(String, [UInt8], String)] = [
            ("right header CRC", member(flags: 0x02, [], headerCRC: { $0 }), "input"),
            ("wrong header CRC", member(flags: 0x02, [], headerCRC: { $0 ^ 0x0001 }), "gzipCorrupt"),
            ("wrong header CRC after a name", member(flags: 0x0A, Array("a.json".utf8) + [0], headerCRC: { ~$0 }), "gzipCorrupt"),
            ("extra field, name, comment, CRC", member(flags: 0x1E, extra + Array("n".utf8) + [0] + Array("c".utf8) + [0], headerCRC: { $0 }), "input"),
            ("extra field", member(flags: 0x04, extra), "input"),
            ("reserved flag", member(flags: 0x20, []), "gzipCorrupt"),
            ("extra field longer than the stream", Array(plain.prefix(10)).enumerated().map { $0.offset == 3 ? 0x04 : $0.element } + [0xFF, 0xFF, 1, 2], "gzipTruncated"),
            ("name without its end", Array(plain.prefix(10)).enumerated().map { $0.offset == 3 ? 0x08 : $0.element } + Array("name".utf8), "gzipTruncated"),
        ]
        for (name, stream, expected) in cases {
            let seen = outcomes(stream)
            #expect(Set(seen) == [expected], "\(name): \(seen)")
            let followed = outcomes(stream + plain)
            #expect(Set(followed).count == 1, "\(name), then another member: \(followed)")
        }
    }

    /// CRC-32 (RFC 1952 8), bit by bit.
    private static func crc32(_ bytes: [UInt8]) -> UInt32 {
        var crc: UInt32 = 0xFFFF_FFFF
        for byte in bytes {
            crc ^= UInt32(byte)
            for _ in 0..<8 { crc = crc & 1 == 1 ? (crc >> 1) ^ 0xEDB8_8320 : crc >> 1 }
        }
        return ~crc
    }

    /// On Linux the CI machine has libdeflate (`.ci/run` installs `libdeflate0`): the tests
    /// above must run with it there, not quietly with zlib alone.
    @Test func libdeflate_isUsedWhereTheSystemHasIt() async throws {
        #if os(Linux)
        if ProcessInfo.processInfo.environment["CI"] != nil {
            #expect(Gzip.engines.contains(.libdeflate), "CI must have libdeflate.so.0 (Debian: libdeflate0)")
        }
        #endif
        if ProcessInfo.processInfo.environment["FIELDMERGE_GZIP"] != "zlib" {
            #expect(Gzip.preferredEngine == Gzip.engines.last)
        } else {
            #expect(Gzip.preferredEngine == .zlib)
        }
    }
}
