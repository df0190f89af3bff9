import FieldMerge
import FieldMergeServer
import Logging
import PostgresNIO
import Synchronization

/// The `AttachmentStore` of `serve --postgres`: attachment bytes in two tables of the data
/// set's PostgreSQL schema, so that every process serving the data set serves its bytes.
///
/// ```
/// __fm_attachments        "sha256" (key), "held" (bytes stored), "size" (set once finished),
///                         "lease", "lease_until" (the open upload), "changed",
///                         "generation" (a random token set when the row is made)
/// __fm_attachment_chunks  "sha256", "offset", "bytes" (at most ``chunkSize`` each)
/// ```
///
/// An upload appends chunks at the end of what is held; a chunk and the count it adds are
/// one statement, so what `held` says is exactly what the chunks hold, whatever process
/// crashed. One upload of a hash is open at a time across all processes: it holds a lease
/// (a random token), renewed with each chunk, that lapses after ``leaseSeconds`` when its
/// process died. Finishing reads the chunks back one at a time to check the SHA-256, then
/// sets `size`, which makes the bytes readable. Reads send one chunk per query. No call
/// holds more than one chunk (plus what an upload has not yet written, under one chunk).
///
/// An upload closed before its end leaves its hash so far in this process
/// (`ResumableDigests`, keyed by the row's `generation` and `held`): the next upload of the
/// hash that this process takes goes on from it instead of reading the chunks back. Chunks
/// are only ever appended while a row lives, and a row made again (after garbage collection
/// or a mismatch removed it) has a new generation, so a kept hash always covers exactly
/// the bytes held; an upload another process took reads them back once.
public final class PostgresAttachmentStore: AttachmentStore {
    let connector: PostgresConnector
    /// The PostgreSQL schema (quoted) the tables are in.
    let schema: String
    let schemaName: String
    /// The largest chunk a row holds and a read returns.
    public let chunkSize: Int
    /// How long an upload's lease lasts without a chunk arriving.
    public let leaseSeconds: Int
    /// How uploads are hashed.
    public let hashing: AttachmentHashing
    /// The hashes of uploads this process closed before their end.
    let resumable = ResumableDigests()

    /// A store in the PostgreSQL schema `schema` (the URL's when nil) of `connector`'s
    /// database; ``prepare()`` makes its tables.
    ///
    /// - Throws: `ServerError/Code/storage` when `schema` is not a plain name.
    public init(
        _ connector: PostgresConnector, schema: String? = nil, chunkSize: Int = 512 * 1024, leaseSeconds: Int = 120,
        hashing: AttachmentHashing = .portable
    ) throws(ServerError) {
        let name = schema ?? connector.url.schema
        guard PostgresIdentifier.isPlainName(name) else {
            throw ServerError(.storage, "the PostgreSQL schema name \(name.debugDescription) is not a plain name (\(PostgresIdentifier.plainNameRule))")
        }
        precondition(chunkSize > 0 && leaseSeconds > 0)
        self.connector = connector
        schemaName = name
        self.schema = "\"\(name)\""
        self.chunkSize = chunkSize
        self.leaseSeconds = leaseSeconds
        self.hashing = hashing
    }

    var files: String { schema + ".\"__fm_attachments\"" }
    var chunks: String { schema + ".\"__fm_attachment_chunks\"" }

    /// Creates the schema and the two tables when missing, taking turns with other processes
    /// (the advisory lock the data set's storage opens under).
    public func prepare() async throws {
        try await connector.client.withConnection { connection in
            let run = { (sql: String, binds: PostgresBindings) in
                _ = try await connection.query(PostgresQuery(unsafeSQL: sql, binds: binds), logger: self.connector.logger).collect()
            }
            try await run("BEGIN", PostgresBindings())
            do {
                try await run("SELECT pg_advisory_xact_lock(hashtext($1))", Self.binds("fieldmerge:" + schemaName))
                try await run("CREATE SCHEMA IF NOT EXISTS \(schema)", PostgresBindings())
                try await run(
                    "CREATE TABLE IF NOT EXISTS \(files) (\"sha256\" TEXT PRIMARY KEY, \"held\" BIGINT NOT NULL DEFAULT 0, "
                        + "\"size\" BIGINT, \"lease\" TEXT, \"lease_until\" TIMESTAMPTZ, \"changed\" TIMESTAMPTZ NOT NULL DEFAULT now())",
                    PostgresBindings())
                // Rows made before generations had none: their uploads read back once.
                try await run("ALTER TABLE \(files) ADD COLUMN IF NOT EXISTS \"generation\" TEXT", PostgresBindings())
                try await run(
                    "CREATE TABLE IF NOT EXISTS \(chunks) (\"sha256\" TEXT NOT NULL, \"offset\" BIGINT NOT NULL, "
                        + "\"bytes\" BYTEA NOT NULL, PRIMARY KEY (\"sha256\", \"offset\"))",
                    PostgresBindings())
                try await run("COMMIT", PostgresBindings())
            } catch {
                try? await run("ROLLBACK", PostgresBindings())
                throw error
            }
        }
    }

    public func held(_ sha256: String) async throws -> AttachmentHeld {
        try Self.checkHash(sha256)
        guard let row = try await query("SELECT \"held\", \"size\" FROM \(files) WHERE \"sha256\" = $1", Self.binds(sha256)).first else {
            return .absent
        }
        let (held, size) = try row.decode((Int64, Int64?).self)
        return size.map { .complete(size: $0) } ?? .partial(bytes: held)
    }

    public func upload(_ sha256: String, at offset: Int64) async throws -> any AttachmentUpload {
        try Self.checkHash(sha256)
        let lease = Self.newLease()
        try await query(
            "INSERT INTO \(files) (\"sha256\", \"generation\") VALUES ($1, $2) ON CONFLICT (\"sha256\") DO NOTHING",
            Self.binds(sha256, Self.newLease()))
        // Taken only when finished is not, no lease is running and the offset is what is held:
        // one statement, so two processes cannot both take it.
        let taken = try await query(
            "UPDATE \(files) SET \"lease\" = $2, \"lease_until\" = now() + make_interval(secs => $4), \"changed\" = now() "
                + "WHERE \"sha256\" = $1 AND \"size\" IS NULL AND (\"lease\" IS NULL OR \"lease_until\" < now()) AND \"held\" = $3 "
                + "RETURNING \"generation\"",
            Self.binds(sha256, lease, offset, Double(leaseSeconds)))
        if let row = taken.first {
            let generation = try row.decode(String?.self)
            let digest = generation.flatMap { resumable.take(sha256, held: offset, generation: $0) }
            return PostgresAttachmentUpload(store: self, sha256: sha256, lease: lease, held: offset, generation: generation, digest: digest)
        }
        // Why not: read after the fact, for the error only.
        guard let row = try await query(
            "SELECT \"held\", \"size\", \"lease\" IS NOT NULL AND \"lease_until\" >= now() FROM \(files) WHERE \"sha256\" = $1",
            Self.binds(sha256)).first
        else { throw AttachmentStoreError.busy }
        let (held, size, leased) = try row.decode((Int64, Int64?, Bool).self)
        if let size { throw AttachmentStoreError.complete(size: size) }
        if leased { throw AttachmentStoreError.busy }
        throw AttachmentStoreError.offsetMismatch(held: held)
    }

    public func read(_ sha256: String, range: Range<Int64>) async throws -> AsyncThrowingStream<[UInt8], any Error> {
        try Self.checkHash(sha256)
        guard case .complete(let size) = try await held(sha256) else { throw AttachmentStoreError.notFound }
        precondition(range.lowerBound >= 0 && range.upperBound <= size, "the range \(range) is outside the \(size) bytes held")
        let position = Position(range.lowerBound)
        return AsyncThrowingStream {
            let start = position.value.withLock { $0 }
            guard start < range.upperBound else { return nil }
            // The chunk that holds `start`, cut to the range, on the database's side.
            guard let row = try await self.query(
                "SELECT substring(\"bytes\" FROM ($2 - \"offset\" + 1)::int FOR $3) FROM \(self.chunks) "
                    + "WHERE \"sha256\" = $1 AND \"offset\" <= $2 ORDER BY \"offset\" DESC LIMIT 1",
                Self.binds(sha256, start, Int32(clamping: range.upperBound - start))).first
            else { throw ServerError(.corrupt, "attachment \(sha256): no chunk holds byte \(start)") }
            let chunk = Array(try row.decode(ByteBuffer.self).readableBytesView)
            guard !chunk.isEmpty else { throw ServerError(.corrupt, "attachment \(sha256): its chunks end before byte \(start)") }
            position.value.withLock { $0 = start + Int64(chunk.count) }
            return chunk
        }
    }

    private final class Position: Sendable {
        let value: Mutex<Int64>
        init(_ start: Int64) { value = Mutex(start) }
    }

    /// Runs one statement on a pooled connection and collects its rows; a failure of the
    /// database is a `ServerError/Code/storage`.
    @discardableResult
    func query(_ sql: String, _ binds: PostgresBindings) async throws -> [PostgresRow] {
        do {
            return try await connector.client.query(PostgresQuery(unsafeSQL: sql, binds: binds), logger: connector.logger).collect()
        } catch {
            throw PostgresConnector.failure(error, doing: "PostgreSQL attachments failed")
        }
    }

    static func binds(_ values: any PostgresDynamicTypeEncodable...) -> PostgresBindings { PostgresServerStorage.binds(values) }

    /// Why a hash is refused before it reaches a statement: the caller should have checked.
    private static func checkHash(_ sha256: String) throws(ServerError) {
        guard AttachmentReference.isSHA256(sha256) else { throw ServerError(.badRequest, "not a SHA-256: \(sha256.prefix(80).debugDescription)") }
    }

    /// 128 random bits, in hex: the token of one open upload, or of one row's generation.
    private static func newLease() -> String {
        var generator = SystemRandomNumberGenerator()
        return String(generator.next() as UInt64, radix: 16) + "-" + String(generator.next() as UInt64, radix: 16)
    }
}
