import FieldMerge

/// How the SHA-256 of attachment bytes is computed: by a server's byte store as an upload
/// arrives, and on a device by its `Store` when a file is attached and when a download is
/// checked.
///
/// ``portable`` is the core's ``SHA256``, plain Swift (about 120 MB/s on this project's test
/// machine, as fast as `sha256sum`). A faster one can be passed: `fieldmerge serve` and
/// `fieldmerge bench` use swift-crypto's (BoringSSL, with the CPU's SHA instructions: about
/// ten times as fast; `FieldMergeCryptoHashing`), an app on Apple platforms CryptoKit's.
/// The core links neither, so that it stays free of them.
public struct AttachmentHashing: Sendable {
    /// A name for logs and benchmarks.
    public var name: String
    private let make: @Sendable () -> any AttachmentDigest

    public init(name: String, make: @escaping @Sendable () -> any AttachmentDigest) {
        self.name = name
        self.make = make
    }

    /// A new digest, with nothing fed yet.
    public func digest() -> any AttachmentDigest { make() }

    /// The core's plain-Swift SHA-256.
    public static let portable = AttachmentHashing(name: "portable") { PortableDigest() }
}

/// An incremental SHA-256: bytes in any number of pieces, then the digest once.
public protocol AttachmentDigest: Sendable {
    mutating func update(_ bytes: UnsafeRawBufferPointer)
    /// The digest as 64 lowercase hexadecimal digits. Called once.
    mutating func finalizeHex() -> String
}

extension AttachmentDigest {
    public mutating func update(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { update($0) }
    }
}

private struct PortableDigest: AttachmentDigest {
    var hasher = SHA256.Hasher()
    mutating func update(_ bytes: UnsafeRawBufferPointer) { hasher.update(bufferPointer: bytes) }
    mutating func finalizeHex() -> String { SHA256.hex(hasher.finalize()) }
}
