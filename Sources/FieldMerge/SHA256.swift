/// SHA-256 (FIPS 180-4), stdlib only: in the core so that the device and the server check
/// attachments (Specs/attachments.md) with one implementation, and workloads and
/// simulations digest with it too.
///
/// `hash(_:)` hashes a whole sequence; ``SHA256/Hasher`` hashes incrementally, so large
/// digests (a million rows) never need one giant buffer.
public enum SHA256 {
    /// Hashes `bytes` in one go.
    public static func hash(_ bytes: some Sequence<UInt8>) -> [UInt8] {
        var hasher = Hasher()
        hasher.update(bytes)
        return hasher.finalize()
    }

    /// Lowercase hexadecimal rendering of `bytes`.
    public static func hex(_ bytes: [UInt8]) -> String {
        String(unsafeUninitializedCapacity: bytes.count * 2) { out in
            var i = 0
            for b in bytes {
                out[i] = _hexDigit(b &>> 4)
                out[i + 1] = _hexDigit(b & 15)
                i += 2
            }
            return i
        }
    }

    /// Incremental SHA-256: `update` any number of times, then `finalize` once.
    public struct Hasher: Sendable {
        @usableFromInline var _state: _State = _State()
        /// Pending bytes of an incomplete block (always 64 bytes long).
        @usableFromInline var _block: [UInt8] = Array(repeating: 0, count: 64)
        @usableFromInline var _blockCount: Int = 0
        @usableFromInline var _length: UInt64 = 0

        public init() {}

        /// Feeds raw bytes.
        public mutating func update(bufferPointer bytes: UnsafeRawBufferPointer) {
            guard var p = bytes.baseAddress, bytes.count > 0 else { return }
            var remaining = bytes.count
            _length &+= UInt64(remaining)
            if _blockCount > 0 {
                let take = Swift.min(64 - _blockCount, remaining)
                let offset = _blockCount
                _block.withUnsafeMutableBytes { dst in
                    (dst.baseAddress! + offset).copyMemory(from: p, byteCount: take)
                }
                _blockCount += take
                p += take
                remaining -= take
                if _blockCount == 64 {
                    _block.withUnsafeBytes { _state.compress($0.baseAddress!, blocks: 1) }
                    _blockCount = 0
                }
            }
            let full = remaining / 64
            if full > 0 {
                _state.compress(p, blocks: full)
                p += full * 64
                remaining -= full * 64
            }
            if remaining > 0 {
                _block.withUnsafeMutableBytes { dst in
                    dst.baseAddress!.copyMemory(from: p, byteCount: remaining)
                }
                _blockCount = remaining
            }
        }

        /// Feeds a sequence of bytes (contiguous storage is hashed in place).
        public mutating func update(_ bytes: some Sequence<UInt8>) {
            let done: Void? = bytes.withContiguousStorageIfAvailable {
                update(bufferPointer: UnsafeRawBufferPointer($0))
            }
            if done != nil { return }
            var chunk: [UInt8] = []
            chunk.reserveCapacity(4096)
            for b in bytes {
                chunk.append(b)
                if chunk.count == 4096 {
                    chunk.withUnsafeBytes { update(bufferPointer: $0) }
                    chunk.removeAll(keepingCapacity: true)
                }
            }
            chunk.withUnsafeBytes { update(bufferPointer: $0) }
        }

        /// Feeds the UTF-8 bytes of `string`.
        public mutating func update(_ string: String) {
            var s = string
            s.withUTF8 { update(bufferPointer: UnsafeRawBufferPointer($0)) }
        }

        /// Pads, processes the last block(s), and returns the 32-byte digest.
        public mutating func finalize() -> [UInt8] {
            let bitLength = _length &* 8
            var tail: [UInt8] = [0x80]
            let padZeros = (64 + 56 - (_blockCount + 1) % 64) % 64
            tail.append(contentsOf: repeatElement(0, count: padZeros))
            for i in stride(from: 56, through: 0, by: -8) {
                tail.append(UInt8(truncatingIfNeeded: bitLength &>> UInt64(i)))
            }
            let savedLength = _length
            tail.withUnsafeBytes { update(bufferPointer: $0) }
            _length = savedLength
            precondition(_blockCount == 0)
            var out: [UInt8] = []
            out.reserveCapacity(32)
            for w in [_state.h0, _state.h1, _state.h2, _state.h3,
                      _state.h4, _state.h5, _state.h6, _state.h7] {
                out.append(UInt8(truncatingIfNeeded: w &>> 24))
                out.append(UInt8(truncatingIfNeeded: w &>> 16))
                out.append(UInt8(truncatingIfNeeded: w &>> 8))
                out.append(UInt8(truncatingIfNeeded: w))
            }
            return out
        }
    }

    @usableFromInline
    struct _State: Sendable {
        var h0: UInt32 = 0x6a09_e667, h1: UInt32 = 0xbb67_ae85
        var h2: UInt32 = 0x3c6e_f372, h3: UInt32 = 0xa54f_f53a
        var h4: UInt32 = 0x510e_527f, h5: UInt32 = 0x9b05_688c
        var h6: UInt32 = 0x1f83_d9ab, h7: UInt32 = 0x5be0_cd19

        @usableFromInline init() {}

        /// Processes `blocks` consecutive 64-byte blocks starting at `p`.
        mutating func compress(_ p: UnsafeRawPointer, blocks: Int) {
            var h0 = self.h0, h1 = self.h1, h2 = self.h2, h3 = self.h3
            var h4 = self.h4, h5 = self.h5, h6 = self.h6, h7 = self.h7
            _sha256K.withUnsafeBufferPointer { k in
                withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 64) { w in
                    for blockIndex in 0..<blocks {
                        let base = p + blockIndex &* 64
                        for t in 0..<16 {
                            w[t] = UInt32(bigEndian: base.loadUnaligned(fromByteOffset: t &* 4, as: UInt32.self))
                        }
                        for t in 16..<64 {
                            let x = w[t &- 15], y = w[t &- 2]
                            let s0 = _rotr(x, 7) ^ _rotr(x, 18) ^ (x &>> 3)
                            let s1 = _rotr(y, 17) ^ _rotr(y, 19) ^ (y &>> 10)
                            w[t] = w[t &- 16] &+ s0 &+ w[t &- 7] &+ s1
                        }
                        var a = h0, b = h1, c = h2, d = h3, e = h4, f = h5, g = h6, h = h7
                        for t in 0..<64 {
                            let S1 = _rotr(e, 6) ^ _rotr(e, 11) ^ _rotr(e, 25)
                            let ch = (e & f) ^ (~e & g)
                            let t1 = h &+ S1 &+ ch &+ k[t] &+ w[t]
                            let S0 = _rotr(a, 2) ^ _rotr(a, 13) ^ _rotr(a, 22)
                            let maj = (a & b) ^ (a & c) ^ (b & c)
                            let t2 = S0 &+ maj
                            h = g; g = f; f = e; e = d &+ t1
                            d = c; c = b; b = a; a = t1 &+ t2
                        }
                        h0 &+= a; h1 &+= b; h2 &+= c; h3 &+= d
                        h4 &+= e; h5 &+= f; h6 &+= g; h7 &+= h
                    }
                }
            }
            self.h0 = h0; self.h1 = h1; self.h2 = h2; self.h3 = h3
            self.h4 = h4; self.h5 = h5; self.h6 = h6; self.h7 = h7
        }
    }
}

@inline(__always)
private func _rotr(_ x: UInt32, _ n: UInt32) -> UInt32 {
    (x &>> n) | (x &<< (32 &- n))
}

@inline(__always)
package func _hexDigit(_ nibble: UInt8) -> UInt8 {
    nibble < 10 ? 0x30 &+ nibble : 0x61 &+ (nibble &- 10)
}

private let _sha256K: [UInt32] = [
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
]
