import FieldMerge
import FieldMergeServer
import PostgresNIO

/// An open upload of a ``PostgresAttachmentStore``: bytes gathered into chunks of
/// ``PostgresAttachmentStore/chunkSize`` and written one statement per chunk under the
/// upload's lease. Bytes not yet written (less than a chunk) are written by
/// ``finish(size:)`` and ``close()``; a process that dies loses only those, and `held`
/// in the table never counts bytes that are not stored. The SHA-256 is computed as chunks
/// are written (after the chunks an earlier upload left, read back when this one writes
/// its first, unless this process kept their hash: ``PostgresAttachmentStore``), so
/// finishing reads nothing back.
actor PostgresAttachmentUpload: AttachmentUpload {
    private let store: PostgresAttachmentStore
    private let sha256: String
    private let lease: String
    /// The bytes written to the table.
    private var written: Int64
    /// Bytes appended, not written yet.
    private var buffer: [UInt8] = []
    private var open = true
    /// The hash of the bytes written so far; nil until the bytes an earlier upload left
    /// are read.
    private var hasher: (any AttachmentDigest)?

    /// The row's generation (nil for a row made before generations): a hash kept at close
    /// is tied to it.
    private let generation: String?

    init(store: PostgresAttachmentStore, sha256: String, lease: String, held: Int64, generation: String?, digest: (any AttachmentDigest)?) {
        self.store = store
        self.sha256 = sha256
        self.lease = lease
        self.generation = generation
        written = held
        hasher = digest
    }

    var held: Int64 { written + Int64(buffer.count) }

    func append(_ bytes: [UInt8]) async throws {
        guard open else { throw AttachmentStoreError.busy }
        buffer += bytes
        while buffer.count >= store.chunkSize {
            let chunk = Array(buffer[..<store.chunkSize])
            buffer.removeFirst(store.chunkSize)
            try await write(chunk)
        }
    }

    /// Adds `chunk` at the end of what the table holds, if the lease is still this upload's.
    private func write(_ chunk: [UInt8]) async throws {
        _ = try await startedHasher()
        let rows = try await store.query(
            "WITH moved AS (UPDATE \(store.files) SET \"held\" = \"held\" + $3, "
                + "\"lease_until\" = now() + make_interval(secs => $5), \"changed\" = now() "
                + "WHERE \"sha256\" = $1 AND \"lease\" = $2 AND \"held\" = $4 RETURNING 1) "
                + "INSERT INTO \(store.chunks) (\"sha256\", \"offset\", \"bytes\") SELECT $1, $4, $6 FROM moved RETURNING 1",
            PostgresAttachmentStore.binds(
                sha256, lease, Int64(chunk.count), written, Double(store.leaseSeconds), ByteBuffer(bytes: chunk)))
        // The lease lapsed and another upload took the hash: this one has lost its place.
        guard !rows.isEmpty else {
            open = false
            throw AttachmentStoreError.busy
        }
        written += Int64(chunk.count)
        hasher!.update(chunk)
    }

    /// The hash so far, reading back what earlier uploads wrote the first time.
    private func startedHasher() async throws -> any AttachmentDigest {
        if let hasher { return hasher }
        var started = store.hashing.digest()
        var offset: Int64 = 0
        while offset < written {
            guard let row = try await store.query(
                "SELECT \"bytes\" FROM \(store.chunks) WHERE \"sha256\" = $1 AND \"offset\" = $2",
                PostgresAttachmentStore.binds(sha256, offset)).first
            else { throw ServerError(.corrupt, "attachment \(sha256): no chunk starts at byte \(offset)") }
            let bytes = try row.decode(ByteBuffer.self)
            guard bytes.readableBytes > 0 else { throw ServerError(.corrupt, "attachment \(sha256): an empty chunk at byte \(offset)") }
            bytes.withUnsafeReadableBytes { started.update($0) }
            offset += Int64(bytes.readableBytes)
        }
        hasher = started
        return started
    }

    private func flush() async throws {
        guard !buffer.isEmpty else { return }
        let rest = buffer
        buffer = []
        try await write(rest)
    }

    func finish(size: Int64) async throws {
        guard open else { throw AttachmentStoreError.busy }
        defer { open = false }
        do {
            try await flush()
        } catch {
            await release()
            throw error
        }
        store.resumable.forget(sha256)
        guard written == size else {
            try await remove()
            throw AttachmentStoreError.sizeMismatch(expected: size, held: written)
        }
        var hasher = try await startedHasher()
        let actual = hasher.finalizeHex()
        guard actual == sha256 else {
            try await remove()
            throw AttachmentStoreError.hashMismatch(expected: sha256, actual: actual, size: size)
        }
        let done = try await store.query(
            "UPDATE \(store.files) SET \"size\" = \"held\", \"lease\" = NULL, \"lease_until\" = NULL, \"changed\" = now() "
                + "WHERE \"sha256\" = $1 AND \"lease\" = $2 AND \"held\" = $3 RETURNING 1",
            PostgresAttachmentStore.binds(sha256, lease, size))
        guard !done.isEmpty else { throw AttachmentStoreError.busy }
    }

    func close() async {
        guard open else { return }
        open = false
        // What could not be written is not held: a later upload resumes at the table's count.
        do {
            try await flush()
            // The hash of exactly what the table holds, for this process's next upload of it.
            if let generation, let hasher { store.resumable.keep(sha256, held: written, generation: generation, digest: hasher) }
        } catch {
            store.resumable.forget(sha256)
        }
        await release()
    }

    /// Lets another upload of the hash begin.
    private func release() async {
        _ = try? await store.query(
            "UPDATE \(store.files) SET \"lease\" = NULL, \"lease_until\" = NULL WHERE \"sha256\" = $1 AND \"lease\" = $2",
            PostgresAttachmentStore.binds(sha256, lease))
    }

    /// Removes the row and its chunks (a mismatch: a client starts again from 0).
    private func remove() async throws {
        try await store.query(
            "WITH gone AS (DELETE FROM \(store.files) WHERE \"sha256\" = $1 AND \"lease\" = $2 RETURNING \"sha256\") "
                + "DELETE FROM \(store.chunks) WHERE \"sha256\" IN (SELECT \"sha256\" FROM gone)",
            PostgresAttachmentStore.binds(sha256, lease))
    }
}
