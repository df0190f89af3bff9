#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import FieldMergeSQLiteDriver
import FieldMergeServer

extension SQLiteDataSet {
    /// Compacts the data set at `path` while servers keep serving it (Specs/reliability.md,
    /// "Compaction with a horizon"): the tombstones and departures at revisions up to
    /// `through`, `batch` of each per write transaction, each batch waiting for the servers'
    /// transactions like any writer. The servers see the new horizon with their next request.
    ///
    /// - Parameters:
    ///   - path: The server's SQLite file.
    ///   - through: The revision to compact through (at most the data set's).
    ///   - batch: Tombstones (and departures) removed per write transaction.
    ///   - dryRun: Count what would go, change nothing.
    /// - Throws: ``SQLiteDataSetError`` when the file is missing or not a data set, or a
    ///   batch fails (the batches before it stay done).
    public static func compact(path: String, through: Int64, batch: Int = 10_000, dryRun: Bool) throws(SQLiteDataSetError) -> CompactionReport {
        let database = try open(path)
        defer { database.close() }
        return try describe(path) { () throws(SQLiteError) in
            let entities = try recordedOutline(database, path).entities.filter { !$0.retired }.map(\.name)
            let revision = try database.scalar("SELECT \"value\" FROM \"__fm_server\" WHERE \"key\" = 'maxRevision'")
            let limit = min(max(0, through), SQLiteCompaction.integer(revision))
            if dryRun {
                let counts = try SQLiteCompaction.counts(database, through: limit)
                return CompactionReport(through: limit, removed: counts, horizon: try SQLiteCompaction.horizon(database), batches: 0, dryRun: true)
            }
            var removed = CompactionCounts(), batches = 0
            let size = max(1, batch)
            while true {
                try database.execute("BEGIN IMMEDIATE")
                let step: CompactionCounts
                do throws(SQLiteError) {
                    step = try SQLiteCompaction.compact(database, entities: entities, through: limit, limit: size)
                    try database.execute("COMMIT")
                } catch {
                    try? database.execute("ROLLBACK")
                    throw error
                }
                batches += 1
                removed.add(step)
                if step.tombstones < size && step.departures < size { break }
                // A server's write that found the file locked sleeps in SQLite's busy handler
                // (up to 100 ms at a time) and only gets the lock if it is free when it wakes:
                // without a pause longer than that sleep, the next batch takes the lock first,
                // and a request can wait for many batches.
                usleep(Self.pauseBetweenBatches)
            }
            return CompactionReport(through: limit, removed: removed, horizon: try SQLiteCompaction.horizon(database), batches: batches, dryRun: false)
        }
    }

    /// The pause between two batches of ``compact(path:through:batch:dryRun:)``, in microseconds.
    static let pauseBetweenBatches: useconds_t = 120_000

    /// The newest revision the data set's servers marked at or before `time` (milliseconds
    /// since the epoch), for a horizon given as an age; nil when none was (servers mark one
    /// a minute while they commit).
    public static func revision(markedBy time: Int64, path: String) throws(SQLiteDataSetError) -> Int64? {
        let database = try open(path)
        defer { database.close() }
        return try describe(path) { () throws(SQLiteError) in
            _ = try recordedOutline(database, path)
            let marked = try database.scalar("SELECT count(*) FROM sqlite_master WHERE \"name\" = '__fm_marks'")
            guard marked == .integer(1) else { return nil }
            let value = try database.scalar("SELECT max(\"revision\") FROM \"__fm_marks\" WHERE \"at\" <= ?", [.integer(time)])
            if case .integer(let revision)? = value { return revision }
            return nil
        }
    }
}
