import ArgumentParser
import FieldMerge
import FieldMergeCryptoHashing
import FieldMergeServer
import FieldMergeServerAuth
import FieldMergeServerHTTP
import FieldMergeServerSQLite
import FieldMergeSQLiteDriver
import Foundation

extension ServeCommand {
    /// `--tenants DIR`: one SQLite file per tenant in `folder`, the tenant taken from each
    /// verified token (validation made sure there is a verifier); every open file is closed
    /// at the end.
    func serveTenants(
        in folder: String, schema: Schema, options: RevisionServer.Options, verifier: TokenVerifier?, metrics: SyncMetrics?
    ) async throws {
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: folder, isDirectory: &isFolder), isFolder.boolValue else {
            Self.fail("--tenants \(folder): no such folder")
            throw ExitCode(1)
        }
        guard let verifier else { throw ValidationError("--tenants needs token authentication") }
        var database = Database.Options()
        database.durableAcrossPowerLoss = durable
        let limits = tenantOptions.limits
        // With an attachment field, each tenant keeps its bytes beside its file.
        let attachments = ServeAttachmentOptions.hasAttachments(schema)
        let tenants = TenantDirectory.sqliteFiles(
            in: folder, schema: schema, options: options, database: database, limits: limits, attachments: attachments ? .crypto : nil)
        let listening = ListeningFlag()
        let idle = limits.idleTime.map { "\($0.components.seconds)" } ?? "-"
        var configuration = SyncHTTPServer.Configuration(host: host, port: port)
        connections.apply(to: &configuration)
        live.apply(to: &configuration)
        configuration.metrics = metrics
        configuration.console = consoleOptions.load(storage: "tenants in \(folder)", sqlite: nil)
        if attachments { configuration.attachments = SyncHTTPServer.Attachments(maxBytes: Int64(attachmentOptions.attachmentMaxMib) << 20) }
        let http = SyncHTTPServer(
            tenants: tenants, schema: schema, configuration: configuration,
            middleware: { $0.add(middleware: BearerAuthenticator(verifier: verifier)) },
            onListening: Self.announce(
                listening, serving: "tenants in \(folder), at most \(limits.maxOpen) open, idle \(idle) s", mode: mode))
        let sweeper = attachments ? attachmentOptions.tenantSweeper(tenants, folder: folder, logger: http.logger) : nil
        try await serve(http, listening: listening) {
            sweeper?.cancel()
            await sweeper?.value
            await tenants.close()
        }
    }
}
