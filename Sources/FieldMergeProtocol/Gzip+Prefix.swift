import CZlib

extension Gzip {
    /// The first bytes of a body, inflated when it is gzip: at most `count` of them, fewer when
    /// the body is shorter.
    ///
    /// For a glance at what a body starts with before it is decoded in full (the head of a
    /// response, `ResponseHead`). A damaged or truncated stream gives what inflated before
    /// the damage, never an error: the full ``decompress(_:limit:)`` is what reports it.
    ///
    /// - Parameters:
    ///   - bytes: The body as it arrived, gzip'd or not.
    ///   - count: The most bytes to return.
    /// - Complexity: O(`count`): only the input those bytes come from is read.
    public static func prefix(of bytes: [UInt8], count: Int) -> [UInt8] {
        precondition(count >= 0, "negative prefix length")
        guard isGzip(bytes) else { return Array(bytes.prefix(count)) }
        guard count > 0 else { return [] }
        var stream = z_stream()
        let status = czlib_inflate_init2(&stream, 15 + 16)
        precondition(status == Z_OK, "inflateInit2 failed (\(status))")
        defer { inflateEnd(&stream) }
        return [UInt8](unsafeUninitializedCapacity: count) { output, initialized in
            initialized = 0
            bytes.withUnsafeBufferPointer { input in
                stream.next_in = UnsafeMutablePointer(mutating: input.baseAddress!)
                stream.avail_in = uInt(min(input.count, Int(UInt32.max)))
                stream.next_out = output.baseAddress!
                stream.avail_out = uInt(count)
                // Z_SYNC_FLUSH: hand out whatever is inflated, even mid-block; a member that
                // ends goes on into the next one, as `decompress` does.
                while stream.avail_out > 0 && stream.avail_in > 0 {
                    let result = inflate(&stream, Z_SYNC_FLUSH)
                    if result == Z_STREAM_END, stream.avail_in > 0, inflateReset(&stream) == Z_OK { continue }
                    guard result == Z_OK else { break }
                }
                initialized = count - Int(stream.avail_out)
            }
        }
    }
}
