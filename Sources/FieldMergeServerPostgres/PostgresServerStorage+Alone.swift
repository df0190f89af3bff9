import FieldMergeServer
import PostgresNIO

/// A write that runs alone on a data set whose writes run in parallel: compaction, an
/// import, the roots of new scope rules (Specs/http.md §8, "Writes in parallel"). It begins as
/// a write with the lock does, holding the state rows; every other write updates them first
/// to take its revisions, so none begins meanwhile, and this one waits for those in flight.
extension PostgresServerStorage {
    /// How long a write that runs alone waits for the writes in flight before it gives up
    /// (an error the caller may retry): 60 s.
    static let aloneWaitLimit: Duration = .seconds(60)

    /// Waits until no revision is in flight: every write that took revisions before this one
    /// held the state rows has committed or rolled back, so what the body reads up to the
    /// data set's revision is settled, as with the lock. Revisions of backends that are gone
    /// are reaped meanwhile (as a reservation does), and the watermark's move is announced.
    nonisolated(nonsending) func waitForWritesInFlight() async throws {
        let inflight = named("__fm_inflight")
        let sql = "WITH reaped AS (\(reapQuery(after: "$1", quick: "$2", skipLocked: true))), "
            + "told AS (SELECT pg_notify($3, \"value\"::TEXT) FROM \(named("__fm_server")) WHERE \"key\" = 'maxRevision' AND EXISTS (SELECT 1 FROM reaped)) "
            + "SELECT (SELECT count(*) FROM \(inflight) i WHERE NOT EXISTS (SELECT 1 FROM reaped r WHERE r.\"revision\" = i.\"revision\")) "
            + "+ 0 * (SELECT count(*) FROM told)"
        let started = ContinuousClock.now
        while true {
            let left = try await scalar(sql, Self.binds(reapAfterSeconds, quickReapSeconds, liveChannel), prepared: true, as: Int64.self) ?? 0
            guard left > 0 else { return }
            guard ContinuousClock.now - started < Self.aloneWaitLimit else {
                throw ServerError(
                    .storage,
                    "PostgreSQL: \(left) revisions of writes beside this one were still in flight after \(Self.aloneWaitLimit): try again later")
            }
            try await Task.sleep(for: .milliseconds(2))
        }
    }

    /// After an import wrote the state rows as its file has them: the row that says how this
    /// data set's writes are ordered says what this server does (a file made from a data set
    /// whose writes ran in parallel must not keep servers that lock away, nor the reverse).
    nonisolated(nonsending) func markWriteOrder() async throws {
        if order == .parallel {
            try await run(
                "INSERT INTO \(named("__fm_server")) (\"key\", \"value\") VALUES ($1, 1) ON CONFLICT (\"key\") DO UPDATE SET \"value\" = 1",
                Self.binds(Self.writeOrderKey))
        } else {
            try await run("DELETE FROM \(named("__fm_server")) WHERE \"key\" = $1", Self.binds(Self.writeOrderKey))
        }
    }
}
