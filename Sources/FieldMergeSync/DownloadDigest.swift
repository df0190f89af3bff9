import FieldMerge
import FieldMergeFiles
import Synchronization

/// The SHA-256 of a download computed while it arrives. A transport that hands on the pieces
/// it writes has them hashed where they are (``absorb(_:)``), on the thread that hands them
/// on; otherwise each report of the bytes written so far hashes the new ones, read back from
/// the file (from the page cache: they were just written). Bytes already in the file before
/// the download (a resumed one) are read back before the first piece. Whatever neither
/// covered is hashed at the end, so checking a download costs no second pass over the file.
final class DownloadDigest: Sendable {
    private struct State {
        var digest: any AttachmentDigest
        var hashed: Int64 = 0
        /// Where the next piece handed on starts in the file.
        var received: Int64
        var descriptor: Int32 = -1
        var failure: AttachmentFileError?
    }

    private let path: String
    private let state: Mutex<State>

    /// - Parameter start: the bytes in the file before the download (the first piece's offset).
    init(path: String, hashing: AttachmentHashing, start: Int64 = 0) {
        self.path = path
        state = Mutex(State(digest: hashing.digest(), received: start))
    }

    deinit {
        let descriptor = state.withLock { $0.descriptor }
        if descriptor >= 0 { AttachmentFiles.close(descriptor) }
    }

    /// Hashes the file's bytes up to `end` (those written so far). A failure to read is
    /// kept for ``finish()``.
    func advance(to end: Int64) {
        state.withLock { state in
            guard state.failure == nil else { return }
            do throws(AttachmentFileError) {
                try hash(&state, to: end)
            } catch {
                state.failure = error
            }
        }
    }

    /// Hashes the next piece the transport wrote (after the file's bytes before it).
    func absorb(_ piece: UnsafeRawBufferPointer) {
        state.withLock { state in
            let start = state.received
            state.received += Int64(piece.count)
            guard state.failure == nil else { return }
            do throws(AttachmentFileError) {
                if state.hashed < start { try hash(&state, to: start) }
            } catch {
                return state.failure = error
            }
            // A report may have read part of it back already.
            let skip = Int(min(max(state.hashed - start, 0), Int64(piece.count)))
            guard state.hashed >= start, skip < piece.count else { return }
            state.digest.update(UnsafeRawBufferPointer(rebasing: piece[skip...]))
            state.hashed += Int64(piece.count - skip)
        }
    }

    /// The digest and size of the whole file, once the download is over.
    func finish() throws(AttachmentFileError) -> (sha256: String, size: Int64) {
        try state.withLock { (state) throws(AttachmentFileError) -> (sha256: String, size: Int64) in
            if let failure = state.failure { throw failure }
            try hash(&state, to: .max)
            // The file's size, not the bytes hashed: pieces handed on that never reached the
            // file then fail the check of the size or, when hashed ≠ size, of the hash.
            return (state.digest.finalizeHex(), try AttachmentFiles.size(of: path) ?? 0)
        }
    }

    private func hash(_ state: inout State, to end: Int64) throws(AttachmentFileError) {
        if state.descriptor < 0 { state.descriptor = try AttachmentFiles.openForReading(path) }
        while state.hashed < end {
            let count = Int(min(Int64(AttachmentFiles.chunkSize), end - state.hashed))
            let chunk = try AttachmentFiles.read(state.descriptor, path: path, at: state.hashed, count: count)
            guard !chunk.isEmpty else { return }
            state.digest.update(chunk)
            state.hashed += Int64(chunk.count)
        }
    }
}
