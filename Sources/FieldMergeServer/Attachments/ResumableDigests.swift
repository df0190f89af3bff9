import FieldMerge
import Synchronization

/// The hash so far of uploads closed before their end, by digest, with the bytes it covers
/// and the identity of the bytes it covers (``AttachmentStore`` implementations): a resumed
/// upload goes on from it rather than reading back what is held. A client that uploads in
/// pieces (one `PUT` each) would otherwise have every piece read all the pieces before it:
/// a 1 GiB upload in 4 MiB pieces read 128 GiB.
///
/// A kept hash is used only for the same `held` count and the same `generation`: a store
/// gives held bytes a new generation whenever they may have been replaced rather than
/// appended to (its partial file or row removed and made again), so a hash is never applied
/// to other bytes of the same length. At most ``limit`` hashes are kept.
package final class ResumableDigests: Sendable {
    private let kept = Mutex<[String: Entry]>([:])
    package let limit: Int

    private struct Entry: Sendable {
        var held: Int64
        var generation: String
        var digest: any AttachmentDigest
    }

    package init(limit: Int = 1_024) {
        precondition(limit > 0)
        self.limit = limit
    }

    /// Keeps the hash of the `held` bytes of `sha256`'s upload, of `generation`.
    package func keep(_ sha256: String, held: Int64, generation: String = "", digest: any AttachmentDigest) {
        kept.withLock { kept in
            if kept[sha256] == nil && kept.count >= limit, let any = kept.keys.first { kept[any] = nil }
            kept[sha256] = Entry(held: held, generation: generation, digest: digest)
        }
    }

    /// The kept hash of `sha256` if it covers exactly `held` bytes of `generation`; nil
    /// otherwise (the store then reads what it holds once). Taken: an upload owns it now.
    package func take(_ sha256: String, held: Int64, generation: String = "") -> (any AttachmentDigest)? {
        kept.withLock { kept in
            guard let entry = kept.removeValue(forKey: sha256), entry.held == held, entry.generation == generation else { return nil }
            return entry.digest
        }
    }

    /// Forgets the kept hash of `sha256` (its bytes were removed).
    package func forget(_ sha256: String) { _ = kept.withLock { $0.removeValue(forKey: sha256) } }

    /// How many hashes are kept.
    package var count: Int { kept.withLock { $0.count } }
}
