import FieldMergeProtocol

/// The first byte picks the inflate limit (low 3 bits) and the compression level; the rest
/// is the stream. Inflating never passes the limit and fails only with a `WireError`;
/// compressing the same bytes and inflating them gives them back, and one byte less of
/// limit is `gzipTooLarge`. `Gzip.prefix` of any stream never fails, and of a stream that
/// inflates is the start of what it inflates to. Every engine the process has (zlib, and
/// libdeflate where the system has it) inflates a stream to the same bytes or fails with
/// the same error, and reads what each of them writes.
func fuzzGzip(_ bytes: UnsafeRawBufferPointer) {
    guard let control = bytes.first else { return }
    let limits = [0, 1, 16, 100, 1_024, 4_096, 65_536, 1 << 20]
    let limit = limits[Int(control & 7)]
    let level = Int32(control >> 3) % 10
    let input = Array(bytes.dropFirst())

    let prefixLength = [0, 1, 16, 64][Int(control >> 6)]
    let prefix = Gzip.prefix(of: input, count: prefixLength)
    require(prefix.count <= prefixLength, "a prefix of \(prefix.count) bytes, past \(prefixLength)")
    let outcomes = Gzip.engines.map { engine in
        Result { () throws(WireError) in try Gzip.decompress(input, limit: limit, engine: engine) }
    }
    require(outcomes.allSatisfy { $0 == outcomes[0] }, "the engines disagree on \(input.count) bytes")
    do {
        let output = try Gzip.decompress(input, limit: limit)
        require(output.count <= limit, "inflated \(output.count) bytes past the limit \(limit)")
        if output.count < limit {
            require(prefix == Array(output.prefix(prefixLength)), "the prefix is not the start of the inflated stream")
        }
    } catch {
        require(
            [.gzipTruncated, .gzipCorrupt, .gzipTooLarge].contains(error.code),
            "inflate failed with an unexpected error: \(error)")
    }

    for writer in Gzip.engines {
        let packed = Gzip.compress(input, level: level, engine: writer)
        for reader in Gzip.engines {
            require((try? Gzip.decompress(packed, limit: input.count, engine: reader)) == input, "\(writer) → \(reader) changed the bytes")
        }
    }
    let packed = Gzip.compress(input, level: level)
    require(Gzip.isGzip(packed), "compress did not write a gzip member")
    do {
        let unpacked = try Gzip.decompress(packed, limit: input.count)
        require(unpacked == input, "gzip round trip changed \(input.count) bytes")
    } catch {
        fatalError("fuzz property failed: a compressed stream does not inflate: \(error)")
    }
    if !input.isEmpty {
        do {
            _ = try Gzip.decompress(packed, limit: input.count - 1)
            fatalError("fuzz property failed: \(input.count) bytes inflated within a limit of \(input.count - 1)")
        } catch {
            require(error.code == .gzipTooLarge, "a limit one byte short failed with \(error), not gzipTooLarge")
        }
    }
}
