import FieldMerge
import FieldMergeServer
import PostgresNIO

/// Garbage collection in the tables: `changed` is when a hash was last written, finished or
/// kept, by PostgreSQL's clock; keeping and removing are each one statement with their
/// check, so processes collecting and serving at once cannot interleave between them.
extension PostgresAttachmentStore: CollectingAttachmentStore {
    public func keep(_ sha256: String) async throws -> Bool {
        guard AttachmentReference.isSHA256(sha256) else { return false }
        return try await !query(
            "UPDATE \(files) SET \"changed\" = now() WHERE \"sha256\" = $1 AND \"size\" IS NOT NULL RETURNING 1",
            Self.binds(sha256)).isEmpty
    }

    public func unchanged(for seconds: Int64, prefix: String) async throws -> [AttachmentUnchanged] {
        try await query(
            "SELECT \"sha256\", \"held\", \"size\" FROM \(files) WHERE starts_with(\"sha256\", $1) AND \(Self.unchanged) ORDER BY \"sha256\"",
            Self.binds(prefix, Double(seconds))
        ).map { row in
            let (sha256, held, size) = try row.decode((String, Int64, Int64?).self)
            return AttachmentUnchanged(sha256: sha256, held: size.map { .complete(size: $0) } ?? .partial(bytes: held))
        }
    }

    public func remove(_ sha256: String, ifUnchangedFor seconds: Int64) async throws -> Bool {
        guard AttachmentReference.isSHA256(sha256) else { return false }
        let removed = try await query(
            "WITH gone AS (DELETE FROM \(files) WHERE \"sha256\" = $1 AND \(Self.unchanged) RETURNING \"sha256\"), "
                + "chunks AS (DELETE FROM \(chunks) WHERE \"sha256\" IN (SELECT \"sha256\" FROM gone)) SELECT count(*) FROM gone",
            Self.binds(sha256, Double(seconds)))
        let gone = try removed.first?.decode(Int64.self) ?? 0 > 0
        if gone { resumable.forget(sha256) }
        return gone
    }

    /// Unchanged for `$2` seconds, and no upload holding a running lease.
    private static let unchanged =
        "\"changed\" <= now() - make_interval(secs => $2) AND (\"lease\" IS NULL OR \"lease_until\" < now())"
}
