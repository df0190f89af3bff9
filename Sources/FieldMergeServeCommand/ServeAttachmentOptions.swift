import ArgumentParser
import Foundation
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

    /// ``sweeper(_:attachments:logger:)`` for `--tenants`: each sweep goes through the
    /// tenants' files in `folder` and collects each tenant's bytes in turn, holding its
    /// server only for that (a tenant busy past the open limit waits for the next sweep).
    func tenantSweeper(_ tenants: TenantDirectory, folder: String, logger: Logger) -> Task<Void, Never>? {
        guard attachmentSweepMinutes > 0 else { return nil }
        let (interval, grace) = (attachmentSweepMinutes, Int64(attachmentGraceHours) * 3_600)
        return Task {
            while !Task.isCancelled {
                do { try await Task.sleep(for: .seconds(interval * 60)) } catch { return }
                let names = (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []
                for name in names.sorted() where name.hasSuffix(".sqlite") && !Task.isCancelled {
                    let tenant = String(name.dropLast(".sqlite".count))
                    guard TenantDirectory.isValidName(tenant) else { continue }
                    do {
                        let report = try await tenants.withServer(for: tenant, access: .existing) { server in
                            server.attachmentStore == nil ? nil : try await server.collectAttachments(unusedFor: grace)
                        }
                        if let report, report.removedFinished + report.removedPartial > 0 { logger.notice("tenant \(tenant): \(report)") }
                    } catch {
                        logger.error("attachment sweep of tenant \(tenant) failed (tried again in \(interval) minutes): \(error)")
                    }
                }
            }
        }
    }

    /// Whether `schema` has an attachment field (the server then keeps bytes).
    static func hasAttachments(_ schema: Schema) -> Bool {
        schema.entities.contains(where: { $0.fields.contains { $0.type == .attachment } })
    }

    /// The attachment endpoints when `schema` has an attachment field: for `postgres`, its
    /// tables in the data set's PostgreSQL schema (made when missing); otherwise a directory
    /// beside the SQLite file at `database`. Nil without an attachment field, or for a
    /// database in memory.
    func load(
        schema: Schema, database: String?, postgres: (connector: PostgresConnector, schema: String?)?
    ) async throws -> SyncHTTPServer.Attachments? {
        guard Self.hasAttachments(schema) else { return nil }
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
