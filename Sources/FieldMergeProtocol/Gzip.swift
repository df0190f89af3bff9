import CZlib

/// gzip (RFC 1952) for sync bodies: `Content-Encoding: gzip` requests and responses.
///
/// Decompression is bounded: a stream that inflates beyond `limit` bytes is stopped as soon
/// as it passes the limit (a 100 MB zip bomb costs the limit, not 100 MB), and a stream
/// that is truncated, damaged (bad header, data or CRC-32/length trailer) or followed by
/// anything but another gzip member is an error, never a partial result.
public enum Gzip {
    /// The compression level used unless one is given: 1.
    ///
    /// Chosen by `fieldmerge bench codec --records 100000 --gzip-level 1 --gzip-level 2
    /// --gzip-level 3 --gzip-level 6` on the change set of 100,000 `reminders` records with
    /// stamps (30.0 MB of JSON since the shared stamp travels once; release build, 2-core
    /// Linux VM, median of 3 runs), for the time one sync spends on the body over a
    /// mobile-ish 5 MB/s link: `compress + compressed bytes / 5 MB/s + decompress`.
    ///
    /// | level | compressed | ratio | gzip | gunzip | sync time at 5 MB/s |
    /// |---|---|---|---|---|---|
    /// | 1 | 11.4 MB | 2.62 | 0.45 s (66 MB/s) | 0.12 s | **2.86 s** |
    /// | 2 | 11.1 MB | 2.69 | 0.63 s (47 MB/s) | 0.15 s | 3.01 s |
    /// | 3 | 10.9 MB | 2.75 | 0.63 s (47 MB/s) | 0.11 s | 2.93 s |
    /// | 6 | 10.4 MB | 2.88 | 0.87 s (34 MB/s) | 0.12 s | 3.07 s |
    ///
    /// With the repetitive stamps gone, what is left compresses slowly and little; level 1
    /// is the fastest and only 5 % larger, so it wins at 5 MB/s and wins more in process and
    /// on faster links. (Level 3 won on the earlier, stamp-heavy JSON of 53.8 MB.)
    public static let defaultLevel: Int32 = 1

    /// Compresses `bytes` into one gzip member.
    ///
    /// - Parameters:
    ///   - level: zlib's level, 0 (store) ... 9 (smallest); out of range is a precondition
    ///     failure.
    /// - Complexity: O(*n*).
    public static func compress(_ bytes: [UInt8], level: Int32 = defaultLevel) -> [UInt8] {
        precondition((0...9).contains(level), "gzip level must be within 0...9, got \(level)")
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
    public static func decompressIfGzip(_ bytes: [UInt8], limit: Int) throws(WireError) -> [UInt8] {
        isGzip(bytes) ? try decompress(bytes, limit: limit) : bytes
    }

    /// Decompresses a gzip stream (one member or several concatenated).
    ///
    /// - Parameters:
    ///   - limit: The most bytes the output may hold; beyond is ``WireError/Code/gzipTooLarge``.
    /// - Throws: ``WireError`` `gzipTruncated`, `gzipCorrupt` (with the input offset) or
    ///   `gzipTooLarge`.
    public static func decompress(_ bytes: [UInt8], limit: Int) throws(WireError) -> [UInt8] {
        precondition(limit >= 0, "negative decompression limit")
        guard !bytes.isEmpty else { throw WireError(.gzipTruncated, "empty gzip stream", offset: 0) }
        var stream = z_stream()
        let status = czlib_inflate_init2(&stream, 15 + 16)
        precondition(status == Z_OK, "inflateInit2 failed (\(status))")
        defer { inflateEnd(&stream) }

        // The trailer's ISIZE (the size mod 2^32) sizes the output when it is plausible
        // (deflate expands at most ~1032:1), so the usual stream inflates in one buffer.
        var hint = 4 * bytes.count
        if bytes.count >= 18 {
            let size = bytes[bytes.count - 4 ..< bytes.count].reversed().reduce(0) { $0 << 8 | Int($1) }
            if size <= 1032 * bytes.count + 65_536 { hint = size }
        }
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
