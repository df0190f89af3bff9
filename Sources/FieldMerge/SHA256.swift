/// SHA-256 (FIPS 180-4), computed as the bytes arrive: feed any number of pieces with
/// `update(_:)`, then read the digest with ``finalize()``.
///
/// Pure Swift without Foundation, so that the device and the server check attachments the
/// same way with no package dependency. Holds 64 bytes of input at most, never the message.
///
/// ```swift
/// var hash = SHA256()
/// hash.update(Array("abc".utf8))
/// let hex = hash.finalize().hex  // "ba7816bf…"
/// ```
public struct SHA256: Sendable {
    private var state: (UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32) = (
        0x6a09_e667, 0xbb67_ae85, 0x3c6e_f372, 0xa54f_f53a, 0x510e_527f, 0x9b05_688c, 0x1f83_d9ab, 0x5be0_cd19
    )
    /// Input not yet hashed: fewer than 64 bytes.
    private var pending: [UInt8] = []
    /// How many bytes were fed so far.
    public private(set) var count: UInt64 = 0

    public init() { pending.reserveCapacity(64) }

    /// Feeds `bytes`.
    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        guard !bytes.isEmpty else { return }
        count &+= UInt64(bytes.count)
        var start = 0
        if !pending.isEmpty {
            let take = min(64 - pending.count, bytes.count)
            pending.append(contentsOf: bytes[0..<take])
            start = take
            guard pending.count == 64 else { return }
            let block = pending
            block.withUnsafeBytes { Self.compress(&state, $0.baseAddress!) }
            pending.removeAll(keepingCapacity: true)
        }
        while bytes.count - start >= 64 {
            Self.compress(&state, bytes.baseAddress! + start)
            start += 64
        }
        if start < bytes.count { pending.append(contentsOf: bytes[start...]) }
    }

    /// Feeds `bytes`: contiguous ones at once, others copied in pieces.
    public mutating func update<Bytes: Sequence<UInt8>>(_ bytes: Bytes) {
        let done: Void? = bytes.withContiguousStorageIfAvailable { update(UnsafeRawBufferPointer($0)) }
        guard done == nil else { return }
        var piece: [UInt8] = []
        piece.reserveCapacity(4096)
        for byte in bytes {
            piece.append(byte)
            if piece.count == 4096 {
                piece.withUnsafeBytes { update($0) }
                piece.removeAll(keepingCapacity: true)
            }
        }
        piece.withUnsafeBytes { update($0) }
    }

    /// The digest of everything fed; the hasher should not be fed after.
    public mutating func finalize() -> Digest {
        let bits = count &* 8
        var tail = pending
        tail.append(0x80)
        while tail.count % 64 != 56 { tail.append(0) }
        for shift in stride(from: 56, through: 0, by: -8) { tail.append(UInt8(truncatingIfNeeded: bits >> UInt64(shift))) }
        tail.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                Self.compress(&state, raw.baseAddress! + offset)
                offset += 64
            }
        }
        pending.removeAll()
        var bytes: [UInt8] = []
        bytes.reserveCapacity(32)
        for word in [state.0, state.1, state.2, state.3, state.4, state.5, state.6, state.7] {
            bytes += [UInt8(word >> 24), UInt8(truncatingIfNeeded: word >> 16), UInt8(truncatingIfNeeded: word >> 8), UInt8(truncatingIfNeeded: word)]
        }
        return Digest(bytes: bytes)
    }

    /// The digest of `bytes` in one call.
    public static func hash<Bytes: Sequence<UInt8>>(_ bytes: Bytes) -> Digest {
        var hasher = SHA256()
        hasher.update(bytes)
        return hasher.finalize()
    }

    /// A SHA-256 digest: 32 bytes.
    public struct Digest: Hashable, Sendable, CustomStringConvertible {
        public let bytes: [UInt8]

        /// The 64 lowercase hexadecimal digits references and paths use.
        public var hex: String {
            let digits = Array("0123456789abcdef".utf8)
            var text: [UInt8] = []
            text.reserveCapacity(64)
            for byte in bytes {
                text.append(digits[Int(byte >> 4)])
                text.append(digits[Int(byte & 0x0f)])
            }
            return String(decoding: text, as: UTF8.self)
        }

        public var description: String { hex }
    }

    private typealias State = (UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32)

    private static func compress(_ state: inout State, _ block: UnsafeRawPointer) {
        withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 64) { w in
            for i in 0..<16 {
                let b = block + i * 4
                w[i] = UInt32(b.load(as: UInt8.self)) << 24 | UInt32(b.load(fromByteOffset: 1, as: UInt8.self)) << 16
                    | UInt32(b.load(fromByteOffset: 2, as: UInt8.self)) << 8 | UInt32(b.load(fromByteOffset: 3, as: UInt8.self))
            }
            for i in 16..<64 {
                let x = w[i - 15], y = w[i - 2]
                let s0 = (x >> 7 | x << 25) ^ (x >> 18 | x << 14) ^ (x >> 3)
                let s1 = (y >> 17 | y << 15) ^ (y >> 19 | y << 13) ^ (y >> 10)
                w[i] = w[i - 16] &+ s0 &+ w[i - 7] &+ s1
            }
            var (a, b, c, d, e, f, g, h) = state
            Self.roundConstants.withUnsafeBufferPointer { k in
                for i in 0..<64 {
                    let s1 = (e >> 6 | e << 26) ^ (e >> 11 | e << 21) ^ (e >> 25 | e << 7)
                    let choice = (e & f) ^ (~e & g)
                    let t1 = h &+ s1 &+ choice &+ k[i] &+ w[i]
                    let s0 = (a >> 2 | a << 30) ^ (a >> 13 | a << 19) ^ (a >> 22 | a << 10)
                    let majority = (a & b) ^ (a & c) ^ (b & c)
                    let t2 = s0 &+ majority
                    (h, g, f, e, d, c, b, a) = (g, f, e, d &+ t1, c, b, a, t1 &+ t2)
                }
            }
            state = (
                state.0 &+ a, state.1 &+ b, state.2 &+ c, state.3 &+ d, state.4 &+ e, state.5 &+ f, state.6 &+ g, state.7 &+ h
            )
        }
    }

    private static let roundConstants: [UInt32] = [
        0x428a_2f98, 0x7137_4491, 0xb5c0_fbcf, 0xe9b5_dba5, 0x3956_c25b, 0x59f1_11f1, 0x923f_82a4, 0xab1c_5ed5,
        0xd807_aa98, 0x1283_5b01, 0x2431_85be, 0x550c_7dc3, 0x72be_5d74, 0x80de_b1fe, 0x9bdc_06a7, 0xc19b_f174,
        0xe49b_69c1, 0xefbe_4786, 0x0fc1_9dc6, 0x240c_a1cc, 0x2de9_2c6f, 0x4a74_84aa, 0x5cb0_a9dc, 0x76f9_88da,
        0x983e_5152, 0xa831_c66d, 0xb003_27c8, 0xbf59_7fc7, 0xc6e0_0bf3, 0xd5a7_9147, 0x06ca_6351, 0x1429_2967,
        0x27b7_0a85, 0x2e1b_2138, 0x4d2c_6dfc, 0x5338_0d13, 0x650a_7354, 0x766a_0abb, 0x81c2_c92e, 0x9272_2c85,
        0xa2bf_e8a1, 0xa81a_664b, 0xc24b_8b70, 0xc76c_51a3, 0xd192_e819, 0xd699_0624, 0xf40e_3585, 0x106a_a070,
        0x19a4_c116, 0x1e37_6c08, 0x2748_774c, 0x34b0_bcb5, 0x391c_0cb3, 0x4ed8_aa4a, 0x5b9c_ca4f, 0x682e_6ff3,
        0x748f_82ee, 0x78a5_636f, 0x84c8_7814, 0x8cc7_0208, 0x90be_fffa, 0xa450_6ceb, 0xbef9_a3f7, 0xc671_78f2,
    ]
}
