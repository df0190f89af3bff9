import FieldMerge
import Synchronization

/// The portable SHA-256, counting the bytes fed to every digest made from it: a test of
/// how often bytes are hashed (once each, not again on a resume or a check).
public struct CountingDigest: AttachmentDigest {
    public final class Counter: Sendable {
        private let bytes = Mutex(0)
        public init() {}
        public var value: Int { bytes.withLock { $0 } }
        func add(_ count: Int) { bytes.withLock { $0 += count } }
    }

    let counter: Counter
    var inner = AttachmentHashing.portable.digest()

    /// Hashing whose digests count into `counter`.
    public static func hashing(_ counter: Counter) -> AttachmentHashing {
        AttachmentHashing(name: "counting") { CountingDigest(counter: counter) }
    }

    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        counter.add(bytes.count)
        inner.update(bytes)
    }

    public mutating func finalizeHex() -> String { inner.finalizeHex() }
}
