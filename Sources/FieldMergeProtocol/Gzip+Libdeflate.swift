#if canImport(Glibc)
import Glibc
#endif

/// libdeflate (Eric Biggers' whole-buffer DEFLATE library), used for gzip when the system
/// has it: on Linux, where distributions ship `libdeflate.so.0` (Debian's `libdeflate0`).
///
/// It is loaded at run time, never linked: a machine without it, and every Apple platform,
/// uses zlib, and an app linking FieldMerge gains no dependency. Its functions are declared
/// here from its stable C API (`libdeflate.h`, unchanged since 1.0 for these), not from a
/// header, so nothing extra is needed to build.
///
/// On the sync bodies of `Specs/benchmarks.md` (random text, 3 MB a page) it deflates at
/// level 1 about three times as fast as zlib's level 1 and a little smaller, and inflates
/// about three times as fast.
final class Libdeflate: Sendable {
    private typealias AllocCompressor = @convention(c) (Int32) -> OpaquePointer?
    private typealias CompressBound = @convention(c) (OpaquePointer?, Int) -> Int
    private typealias Compress = @convention(c) (OpaquePointer?, UnsafeRawPointer?, Int, UnsafeMutableRawPointer?, Int) -> Int
    private typealias FreeCoder = @convention(c) (OpaquePointer?) -> Void
    private typealias AllocDecompressor = @convention(c) () -> OpaquePointer?
    private typealias Decompress = @convention(c) (
        OpaquePointer?, UnsafeRawPointer?, Int, UnsafeMutableRawPointer?, Int,
        UnsafeMutablePointer<Int>?, UnsafeMutablePointer<Int>?
    ) -> Int32

    private let allocCompressor: AllocCompressor
    private let compressBound: CompressBound
    private let gzipCompress: Compress
    private let freeCompressor: FreeCoder
    private let allocDecompressor: AllocDecompressor
    private let gzipDecompress: Decompress
    private let freeDecompressor: FreeCoder

    /// FLG.FHCRC of a gzip member's header: a CRC-16 of the header follows it.
    static let headerCRCFlag: UInt8 = 0x02

    /// The library of this process, or nil when the system has none (or it lacks a function).
    static let shared: Libdeflate? = load()

    private init(
        allocCompressor: AllocCompressor, compressBound: CompressBound, gzipCompress: Compress,
        freeCompressor: FreeCoder, allocDecompressor: AllocDecompressor, gzipDecompress: Decompress,
        freeDecompressor: FreeCoder
    ) {
        self.allocCompressor = allocCompressor
        self.compressBound = compressBound
        self.gzipCompress = gzipCompress
        self.freeCompressor = freeCompressor
        self.allocDecompressor = allocDecompressor
        self.gzipDecompress = gzipDecompress
        self.freeDecompressor = freeDecompressor
    }

    private static func load() -> Libdeflate? {
        #if os(Linux)
        guard let handle = dlopen("libdeflate.so.0", RTLD_NOW | RTLD_LOCAL) else { return nil }
        func symbol<F>(_ name: String, as type: F.Type) -> F? {
            dlsym(handle, name).map { unsafeBitCast($0, to: type) }
        }
        guard
            let allocCompressor = symbol("libdeflate_alloc_compressor", as: AllocCompressor.self),
            let compressBound = symbol("libdeflate_gzip_compress_bound", as: CompressBound.self),
            let gzipCompress = symbol("libdeflate_gzip_compress", as: Compress.self),
            let freeCompressor = symbol("libdeflate_free_compressor", as: FreeCoder.self),
            let allocDecompressor = symbol("libdeflate_alloc_decompressor", as: AllocDecompressor.self),
            let gzipDecompress = symbol("libdeflate_gzip_decompress_ex", as: Decompress.self),
            let freeDecompressor = symbol("libdeflate_free_decompressor", as: FreeCoder.self)
        else {
            dlclose(handle)
            return nil
        }
        // The handle stays open for the life of the process: the functions are used from it.
        return Libdeflate(
            allocCompressor: allocCompressor, compressBound: compressBound, gzipCompress: gzipCompress,
            freeCompressor: freeCompressor, allocDecompressor: allocDecompressor, gzipDecompress: gzipDecompress,
            freeDecompressor: freeDecompressor)
        #else
        return nil
        #endif
    }

    /// `bytes` as one gzip member at `level` (1...12), or nil when the library refuses.
    func compress(_ bytes: [UInt8], level: Int32) -> [UInt8]? {
        guard let compressor = allocCompressor(level) else { return nil }
        defer { freeCompressor(compressor) }
        let bound = compressBound(compressor, bytes.count)
        // Deflated into scratch space the size of the bound, then copied: an array keeps its
        // capacity, and the bound is about the size of the input.
        let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: bound, alignment: 16)
        defer { scratch.deallocate() }
        let size = bytes.withUnsafeBytes { gzipCompress(compressor, $0.baseAddress, $0.count, scratch.baseAddress, bound) }
        guard size > 0 else { return nil }
        return Array(scratch.prefix(size).bindMemory(to: UInt8.self))
    }

    /// Inflates every gzip member of `bytes`, or nil when that is not the whole story: a
    /// damaged, truncated or over-long stream, or anything after a member that is not
    /// another one. The caller then inflates with zlib, which says what is wrong; so both
    /// engines fail alike, and this one needs no error reporting of its own.
    ///
    /// - Parameters:
    ///   - limit: The most bytes the output may hold.
    ///   - hint: The size to try first; doubled (up to `limit`) while a member does not fit.
    func decompress(_ bytes: [UInt8], limit: Int, hint: Int) -> [UInt8]? {
        guard !bytes.isEmpty, limit > 0, let decompressor = allocDecompressor() else { return nil }
        defer { freeDecompressor(decompressor) }
        var capacity = min(limit, max(hint, 64))
        var output: [UInt8] = []
        var consumed = 0
        while consumed < bytes.count {
            // A member starts here; the input must continue as gzip (RFC 1952 2.2).
            guard bytes.count - consumed >= 4, bytes[consumed] == 0x1F, bytes[consumed + 1] == 0x8B else { return nil }
            // libdeflate skips a header's CRC-16 (FHCRC, RFC 1952 2.3.1) without checking it;
            // zlib checks it. No writer of sync bodies sets that flag, so such a member goes to
            // zlib whole: a wrong header CRC is `gzipCorrupt` whatever the engine.
            guard bytes[consumed + 3] & Self.headerCRCFlag == 0 else { return nil }
            var memberIn = 0
            var memberOut = 0
            var result: Int32 = 0
            let previous = output
            output = [UInt8](unsafeUninitializedCapacity: max(capacity, previous.count)) { buffer, initialized in
                let base = UnsafeMutableRawPointer(buffer.baseAddress!)
                previous.withUnsafeBytes { old in
                    if let start = old.baseAddress { base.copyMemory(from: start, byteCount: old.count) }
                }
                result = bytes.withUnsafeBytes { input in
                    gzipDecompress(
                        decompressor, input.baseAddress! + consumed, input.count - consumed,
                        base + previous.count, buffer.count - previous.count, &memberIn, &memberOut)
                }
                initialized = previous.count + (result == 0 ? memberOut : 0)
            }
            switch result {
            case 0 where memberIn > 0:  // success
                consumed += memberIn
            case 3 where capacity < limit:  // insufficient space: this member again, in more room
                output = previous
                capacity = capacity > limit / 2 ? limit : capacity * 2
            default:  // bad data, or a stream that inflates past the limit
                return nil
            }
        }
        return output
    }
}
