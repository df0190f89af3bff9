import FieldMerge
import FieldMergeFiles
import Synchronization

/// The SHA-256 of a download computed while it arrives: each report of the bytes written so
/// far hashes the new ones, read back from the file (from the page cache: they were just
/// written), on the thread that reports. A download resumed after bytes already in the file
/// hashes those with the first report. Whatever no report covered is hashed at the end, so
/// checking a download costs no second pass over the file.
final class DownloadDigest: Sendable {
    private struct State {
        var digest: any AttachmentDigest
        var hashed: Int64 = 0
        var descriptor: Int32 = -1
        var failure: AttachmentFileError?
    }

    private let path: String
    private let state: Mutex<State>

    init(path: String, hashing: AttachmentHashing) {
        self.path = path
        state = Mutex(State(digest: hashing.digest()))
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

    /// The digest and size of the whole file, once the download is over.
    func finish() throws(AttachmentFileError) -> (sha256: String, size: Int64) {
        try state.withLock { (state) throws(AttachmentFileError) -> (sha256: String, size: Int64) in
            if let failure = state.failure { throw failure }
            try hash(&state, to: .max)
            return (state.digest.finalizeHex(), state.hashed)
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
