import CZlib
import Dispatch

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// With zlib, large bodies are deflated in pieces on every core, as pigz does, into one ordinary gzip
/// member: each piece is a raw deflate stream of its own (no back-references into the piece
/// before), ended on a byte boundary by a sync flush, and the last one by the final block;
/// the pieces' CRC-32s are combined for the trailer. Any gzip reader inflates it; it is a
/// fraction of a percent larger than deflating the body in one stream.
extension Gzip {
    /// Bodies from this size on are deflated in pieces when the machine has several cores.
    static let parallelThreshold = 1 << 20
    /// The size of one piece: large enough that losing the 32 KiB window at its start costs
    /// little, small enough that the cores share the work evenly.
    static let pieceSize = 256 << 10

    /// How many cores the process may use.
    static let cores: Int = max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN))))

    /// One gzip member of `bytes`, deflated in pieces on several threads.
    static func compressInPieces(_ bytes: [UInt8], level: Int32) -> [UInt8] {
        let pieces = (bytes.count + pieceSize - 1) / pieceSize
        var outputs = [[UInt8]](repeating: [], count: pieces)
        var crcs = [uLong](repeating: 0, count: pieces)
        bytes.withUnsafeBufferPointer { input in
            outputs.withUnsafeMutableBufferPointer { outputs in
                crcs.withUnsafeMutableBufferPointer { crcs in
                    let work = Work(input: input, outputs: outputs, crcs: crcs)
                    DispatchQueue.concurrentPerform(iterations: pieces) { piece in
                        let start = piece * pieceSize
                        let slice = UnsafeBufferPointer(rebasing: work.input[start..<min(start + pieceSize, work.input.count)])
                        work.crcs[piece] = crc32(0, slice.baseAddress, uInt(slice.count))
                        work.outputs[piece] = deflateRaw(slice, level: level, last: piece == pieces - 1)
                    }
                }
            }
        }
        var crc = crcs[0]
        for piece in 1..<pieces {
            let length = min(pieceSize, bytes.count - piece * pieceSize)
            crc = crc32_combine(crc, crcs[piece], off_t(length))
        }
        var member: [UInt8] = [0x1F, 0x8B, 8, 0, 0, 0, 0, 0, level == 1 ? 4 : 0, 255]
        member.reserveCapacity(10 + outputs.reduce(0) { $0 + $1.count } + 8)
        for output in outputs { member.append(contentsOf: output) }
        for value in [UInt32(truncatingIfNeeded: crc), UInt32(truncatingIfNeeded: bytes.count)] {
            for shift in stride(from: 0, to: 32, by: 8) { member.append(UInt8(truncatingIfNeeded: value >> UInt32(shift))) }
        }
        return member
    }

    /// The buffers the pieces share. Each piece reads its own range of `input` and writes
    /// only its own element of `outputs` and `crcs`, and `concurrentPerform` returns only
    /// when every piece is done: no two threads touch the same memory.
    private struct Work: @unchecked Sendable {
        let input: UnsafeBufferPointer<UInt8>
        let outputs: UnsafeMutableBufferPointer<[UInt8]>
        let crcs: UnsafeMutableBufferPointer<uLong>
    }

    /// `input` as raw deflate blocks, closed by the final block when `last`, else by a sync
    /// flush (an empty stored block that ends on a byte boundary).
    private static func deflateRaw(_ input: UnsafeBufferPointer<UInt8>, level: Int32, last: Bool) -> [UInt8] {
        var stream = z_stream()
        let status = czlib_deflate_init2(&stream, level, -15, 8)
        precondition(status == Z_OK, "deflateInit2 failed (\(status))")
        defer { deflateEnd(&stream) }
        // The bound, plus the sync flush's 5 bytes and some slack for its partial bits.
        let bound = Int(deflateBound(&stream, uLong(input.count))) + 16
        return [UInt8](unsafeUninitializedCapacity: bound) { output, initialized in
            stream.next_in = UnsafeMutablePointer(mutating: input.baseAddress)
            stream.avail_in = uInt(input.count)
            stream.next_out = output.baseAddress
            stream.avail_out = uInt(bound)
            let result = deflate(&stream, last ? Z_FINISH : Z_SYNC_FLUSH)
            precondition(result == (last ? Z_STREAM_END : Z_OK) && stream.avail_in == 0, "deflate failed (\(result))")
            initialized = bound - Int(stream.avail_out)
        }
    }
}
