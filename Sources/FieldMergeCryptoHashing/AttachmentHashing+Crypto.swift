import FieldMerge
#if canImport(Crypto)
import Crypto

extension AttachmentHashing {
    /// swift-crypto's SHA-256 (BoringSSL on Linux, which uses the CPU's SHA instructions
    /// where it has them; CryptoKit on Apple platforms): what `fieldmerge serve` hashes
    /// uploads with, and `fieldmerge bench attachments` attaches and checks downloads with.
    public static let crypto = AttachmentHashing(name: "swift-crypto") { CryptoDigest() }
}

private struct CryptoDigest: AttachmentDigest {
    var hasher = Crypto.SHA256()
    mutating func update(_ bytes: UnsafeRawBufferPointer) { hasher.update(bufferPointer: bytes) }
    mutating func finalizeHex() -> String { FieldMerge.SHA256.hex(Array(hasher.finalize())) }
}
#endif
