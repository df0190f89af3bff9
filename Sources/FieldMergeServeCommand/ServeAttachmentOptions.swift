import ArgumentParser
import FieldMerge
import FieldMergeServer
import FieldMergeServerHTTP
import FieldMergeServerPostgres
import Logging
import FieldMergeServerSQLite
import FieldMergeCryptoHashing

/// `fieldmerge serve`'s options for attachments (Specs/attachments.md): with a schema that
/// has an attachment field, the bytes are kept in `<db>.attachments/`, or with `--postgres`
/// in the data set's PostgreSQL schema.
struct ServeAttachmentOptions: ParsableArguments {
    @Option(help: "The largest attachment accepted, in MiB (PUT /attachments/<sha256>); a larger one is refused with 413.")
    var attachmentMaxMib: Int = 256

    @Option(help: "Remove attachment bytes no record references, and uploads never finished, once unchanged for this many hours.")
    var attachmentGraceHours: Int = 168

    @Option(help: "How often to look for such bytes, in minutes; 0 never removes any.")
    var attachmentSweepMinutes: Int = 60

    func validate() throws {
        guard (1...1_048_576).contains(attachmentMaxMib) else { throw ValidationError("--attachment-max-mib must be within 1...1048576") }
        guard (1...87_600).contains(attachmentGraceHours) else { throw ValidationError("--attachment-grace-hours must be within 1...87600") }
        guard (0...10_080).contains(attachmentSweepMinutes) else { throw ValidationError("--attachment-sweep-minutes must be within 0...10080") }
    }

    /// Removes unreferenced attachment bytes every ``attachmentSweepMinutes`` until
    /// cancelled (Specs/attachments.md §6), logging what each sweep removed; nil when
    /// sweeps are off or the server keeps no attachments.
    func sweeper(_ server: RevisionServer, attachments: SyncHTTPServer.Attachments?, logger: Logger) -> Task<Void, Never>? {
        guard attachments != nil, attachmentSweepMinutes > 0 else { return nil }
        let (interval, grace) = (attachmentSweepMinutes, Int64(attachmentGraceHours) * 3_600)
        return Task {
            while !Task.isCancelled {
                do {
                    try await Task.sleep(for: .seconds(interval * 60))
                    let report = try await server.collectAttachments(unusedFor: grace)
                    if report.removedFinished + report.removedPartial > 0 { logger.notice("\(report)") }
                } catch is CancellationError {
                    return
                } catch {
                    logger.error("attachment sweep failed (tried again in \(interval) minutes): \(error)")
                }
            }
        }
    }

    /// The attachment endpoints when `schema` has an attachment field: for `postgres`, its
    /// tables in the data set's PostgreSQL schema (made when missing); otherwise a directory
    /// beside the SQLite file at `database`. Nil without an attachment field, or for a
    /// database in memory.
    func load(
        schema: Schema, database: String?, postgres: (connector: PostgresConnector, schema: String?)?
    ) async throws -> SyncHTTPServer.Attachments? {
        guard schema.entities.contains(where: { $0.fields.contains { $0.type == .attachment } }) else { return nil }
        let store: any AttachmentStore
        if let postgres {
            let tables = try PostgresAttachmentStore(postgres.connector, schema: postgres.schema, hashing: .crypto)
            try await tables.prepare()
            store = tables
        } else {
            guard let database, database != ":memory:" else { return nil }
            store = try DirectoryAttachmentStore(besideDatabase: database, hashing: .crypto)
        }
        return SyncHTTPServer.Attachments(store: store, maxBytes: Int64(attachmentMaxMib) << 20)
    }
}
