import Crypto
import FieldMerge
import FieldMergeServer

extension AttachmentHashing {
    /// swift-crypto's SHA-256 (BoringSSL, which uses the CPU's SHA instructions where it
    /// has them): what `fieldmerge serve` hashes attachment uploads with.
    public static let crypto = AttachmentHashing(name: "swift-crypto") { CryptoDigest() }
}

private struct CryptoDigest: AttachmentDigest {
    var hasher = Crypto.SHA256()
    mutating func update(_ bytes: UnsafeRawBufferPointer) { hasher.update(bufferPointer: bytes) }
    mutating func finalizeHex() -> String { FieldMerge.SHA256.hex(Array(hasher.finalize())) }
}
