import CZlib

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// gzip (RFC 1952) for sync bodies: `Content-Encoding: gzip` requests and responses.
///
/// Decompression is bounded: a stream that inflates beyond `limit` bytes is stopped as soon
/// as it passes the limit (a 100 MB zip bomb costs the limit, not 100 MB), and a stream
/// that is truncated, damaged (bad header, header CRC-16 when the header has one, data or
/// CRC-32/length trailer) or followed by anything but another gzip member is an error, never
/// a partial result, and the same error whichever engine inflates it.
public enum Gzip {
    /// The compression level used unless one is given: 1.
    ///
    /// Chosen by `fieldmerge bench codec --records 100000 --gzip-engine zlib --gzip-engine
    /// libdeflate --gzip-level 1 --gzip-level 2 --gzip-level 3 --gzip-level 6 --runs 3` on the
    /// change set of 100,000 `reminders` records with stamps (30.0 MB of JSON; release build,
    /// 2-core Linux VM, medians), for the time one sync spends on the body over a mobile-ish
    /// 5 MB/s link: `compress + compressed bytes / 5 MB/s + decompress`. zlib deflates a body
    /// this large in pieces on both cores; libdeflate on one.
    ///
    /// | engine, level | compressed | ratio | gzip | gunzip | sync time at 5 MB/s |
    /// |---|---|---|---|---|---|
    /// | zlib 1 | 11.4 MB | 2.62 | 0.14 s | 0.078 s | 2.50 s |
    /// | zlib 6 | 10.4 MB | 2.87 | 0.27 s | 0.070 s | 2.43 s |
    /// | libdeflate 1 | 11.0 MB | 2.73 | 0.12 s | 0.031 s | **2.34 s** |
    /// | libdeflate 2 | 10.8 MB | 2.77 | 0.15 s | | 2.35 s |
    /// | libdeflate 6 | 10.3 MB | 2.92 | 0.25 s | 0.030 s | 2.34 s |
    ///
    /// What is left of the JSON once the shared stamp travels once compresses slowly and
    /// little; level 1 is within 1 % of the best sync time at 5 MB/s and the cheapest in CPU,
    /// which is what counts in process and on faster links.
    public static let defaultLevel: Int32 = 1

    /// The implementations of deflate a process can use. Both write ordinary gzip that any
    /// reader inflates, and both read the same streams and fail on the same ones alike.
    public enum Engine: String, Sendable, CaseIterable {
        /// zlib: on every platform. Bodies from 1 MiB on are deflated in pieces on every core.
        case zlib
        /// libdeflate, loaded at run time where the system has it (Linux, `libdeflate.so.0`):
        /// about three times as fast as zlib both ways on sync bodies. Asked for where it is
        /// missing, zlib does the work.
        case libdeflate
    }

    /// The engines this process can use: zlib, and libdeflate when the system has it.
    public static var engines: [Engine] { Libdeflate.shared == nil ? [.zlib] : [.zlib, .libdeflate] }

    /// The engine used unless one is given: libdeflate when the system has it, else zlib.
    /// `FIELDMERGE_GZIP=zlib` in a process's environment keeps it on zlib.
    public static let preferredEngine: Engine = {
        if let setting = getenv("FIELDMERGE_GZIP"), String(cString: setting) == "zlib" { return .zlib }
        return Libdeflate.shared == nil ? .zlib : .libdeflate
    }()

    /// Compresses `bytes` into one gzip member.
    ///
    /// - Parameters:
    ///   - level: The level, 0 (store) ... 9 (smallest), as zlib numbers them (libdeflate's
    ///     levels 1...9 are alike; level 0 is always zlib's); out of range is a precondition
    ///     failure.
    ///   - engine: Which implementation deflates.
    /// - Complexity: O(*n*).
    public static func compress(_ bytes: [UInt8], level: Int32 = defaultLevel, engine: Engine = preferredEngine) -> [UInt8] {
        precondition((0...9).contains(level), "gzip level must be within 0...9, got \(level)")
        if engine == .libdeflate, level > 0, let library = Libdeflate.shared,
           let compressed = library.compress(bytes, level: level) {
            return compressed
        }
        if bytes.count >= parallelThreshold && cores > 1 && level > 0 { return compressInPieces(bytes, level: level) }
        var stream = z_stream()
        let status = czlib_deflate_init2(&stream, level, 15 + 16, 8)
        precondition(status == Z_OK, "deflateInit2 failed (\(status))")
        defer { deflateEnd(&stream) }
        let bound = Int(deflateBound(&stream, uLong(bytes.count)))
        let output = UnsafeMutablePointer<UInt8>.allocate(capacity: bound)
        defer { output.deallocate() }
        return bytes.withUnsafeBufferPointer { input -> [UInt8] in
            var consumed = 0
            var produced = 0
            while true {
                let inputChunk = min(bytes.count - consumed, Int(UInt32.max))
                let outputChunk = min(bound - produced, Int(UInt32.max))
                stream.next_in = UnsafeMutablePointer(mutating: input.baseAddress.map { $0 + consumed })
                stream.avail_in = uInt(inputChunk)
                stream.next_out = output + produced
                stream.avail_out = uInt(outputChunk)
                let last = consumed + inputChunk == bytes.count
                let result = deflate(&stream, last ? Z_FINISH : Z_NO_FLUSH)
                consumed += inputChunk - Int(stream.avail_in)
                produced += outputChunk - Int(stream.avail_out)
                if result == Z_STREAM_END { break }
                precondition(result == Z_OK || result == Z_BUF_ERROR, "deflate failed (\(result))")
            }
            return Array(UnsafeBufferPointer(start: output, count: produced))
        }
    }

    /// Whether `bytes` start like a gzip member (`1F 8B`): bodies are told apart by this, not
    /// by headers, because HTTP stacks may inflate a gzip'd body before anyone sees it.
    @inlinable
    public static func isGzip(_ bytes: [UInt8]) -> Bool {
        bytes.count >= 2 && bytes[0] == 0x1F && bytes[1] == 0x8B
    }

    /// `bytes` decompressed when they are gzip, else as they are.
    ///
    /// - Parameters:
    ///   - limit: The most bytes the output may hold; beyond is ``WireError/Code/gzipTooLarge``.
    ///   - engine: Which implementation inflates.
    public static func decompressIfGzip(_ bytes: [UInt8], limit: Int, engine: Engine = preferredEngine) throws(WireError) -> [UInt8] {
        isGzip(bytes) ? try decompress(bytes, limit: limit, engine: engine) : bytes
    }

    /// Decompresses a gzip stream (one member or several concatenated).
    ///
    /// - Parameters:
    ///   - limit: The most bytes the output may hold; beyond is ``WireError/Code/gzipTooLarge``.
    ///   - engine: Which implementation inflates. libdeflate inflates whole members only: a
    ///     stream it cannot take whole (damaged, truncated, past the limit) is inflated again
    ///     by zlib, which says what is wrong, so the errors are the same with either engine.
    /// - Throws: ``WireError`` `gzipTruncated`, `gzipCorrupt` (with the input offset) or
    ///   `gzipTooLarge`.
    public static func decompress(_ bytes: [UInt8], limit: Int, engine: Engine = preferredEngine) throws(WireError) -> [UInt8] {
        precondition(limit >= 0, "negative decompression limit")
        guard !bytes.isEmpty else { throw WireError(.gzipTruncated, "empty gzip stream", offset: 0) }
        // The trailer's ISIZE (the size mod 2^32) sizes the output when it is plausible
        // (deflate expands at most ~1032:1), so the usual stream inflates in one buffer.
        var hint = 4 * bytes.count
        if bytes.count >= 18 {
            let size = bytes[bytes.count - 4 ..< bytes.count].reversed().reduce(0) { $0 << 8 | Int($1) }
            if size <= 1032 * bytes.count + 65_536 { hint = size }
        }
        if engine == .libdeflate, let library = Libdeflate.shared,
           let output = library.decompress(bytes, limit: limit, hint: hint) {
            return output
        }
        return try inflateWithZlib(bytes, limit: limit, hint: hint)
    }

    /// ``decompress(_:limit:engine:)`` by zlib, streaming: stops as soon as the output passes
    /// `limit`, and tells truncated from damaged streams.
    private static func inflateWithZlib(_ bytes: [UInt8], limit: Int, hint: Int) throws(WireError) -> [UInt8] {
        var stream = z_stream()
        let status = czlib_inflate_init2(&stream, 15 + 16)
        precondition(status == Z_OK, "inflateInit2 failed (\(status))")
        defer { inflateEnd(&stream) }
        let ceiling = limit < Int.max ? limit + 1 : limit  // one byte past the limit detects a bomb
        var capacity = min(ceiling, max(hint, 64) + 1)
        var output: [UInt8] = []
        var consumed = 0
        var outcome: Outcome = .needOutput
        try bytes.withUnsafeBufferPointer { (input) throws(WireError) in
            while true {
                // Inflate into `capacity` bytes, keeping what was produced so far.
                let previous = output
                output = [UInt8](unsafeUninitializedCapacity: capacity) { buffer, initialized in
                    let base = buffer.baseAddress!
                    previous.withUnsafeBufferPointer { old in
                        if let start = old.baseAddress { base.initialize(from: start, count: old.count) }
                    }
                    var produced = previous.count
                    outcome = inflate(&stream, input, &consumed, base, capacity, &produced)
                    initialized = produced
                }
                guard output.count <= limit else {
                    throw WireError(.gzipTooLarge, "gzip stream inflates beyond \(limit) bytes", offset: consumed)
                }
                switch outcome {
                case .done: return
                case .needOutput:
                    capacity = min(ceiling, max(capacity * 2, 65_536))
                case .truncated:
                    throw WireError(.gzipTruncated, "gzip stream ends early", offset: bytes.count)
                case .corrupt(let message):
                    throw WireError(.gzipCorrupt, message, offset: consumed)
                }
            }
        }
        return output
    }

    private enum Outcome {
        case done, needOutput, truncated
        case corrupt(String)
    }

    /// Runs inflate until the input is done, the output is full, or an error.
    private static func inflate(
        _ stream: inout z_stream, _ input: UnsafeBufferPointer<UInt8>, _ consumed: inout Int,
        _ output: UnsafeMutablePointer<UInt8>, _ capacity: Int, _ produced: inout Int
    ) -> Outcome {
        while true {
            if produced == capacity { return .needOutput }
            let inputChunk = min(input.count - consumed, Int(UInt32.max))
            let outputChunk = min(capacity - produced, Int(UInt32.max))
            stream.next_in = UnsafeMutablePointer(mutating: input.baseAddress! + consumed)
            stream.avail_in = uInt(inputChunk)
            stream.next_out = output + produced
            stream.avail_out = uInt(outputChunk)
            let result = CZlib.inflate(&stream, Z_NO_FLUSH)
            consumed += inputChunk - Int(stream.avail_in)
            produced += outputChunk - Int(stream.avail_out)
            switch result {
            case Z_STREAM_END:
                guard consumed < input.count else { return .done }
                // Another member may follow (RFC 1952 2.2); anything else is trailing garbage.
                guard input[consumed] == 0x1F else { return .corrupt("unexpected data after the gzip stream") }
                guard consumed + 1 < input.count else { return .truncated }
                guard input[consumed + 1] == 0x8B else { return .corrupt("unexpected data after the gzip stream") }
                guard inflateReset(&stream) == Z_OK else { return .corrupt("inflateReset failed") }
            case Z_OK:
                continue
            case Z_BUF_ERROR:
                if produced == capacity { return .needOutput }
                if consumed == input.count { return .truncated }
                return .corrupt("inflate made no progress")
            case Z_MEM_ERROR:
                return .corrupt("out of memory while inflating")
            default:
                let reason = stream.msg.map { String(cString: $0) } ?? "error \(result)"
                return .corrupt("corrupt gzip stream: \(reason)")
            }
        }
    }
}
