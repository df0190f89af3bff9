import ArgumentParser
import FieldMerge
import FieldMergeServer
import FieldMergeServerHTTP
import FieldMergeServerPostgres
import FieldMergeServerSQLite

/// `fieldmerge serve`'s options for attachments (Specs/attachments.md): with a schema that
/// has an attachment field, the bytes are kept in `<db>.attachments/`, or with `--postgres`
/// in the data set's PostgreSQL schema.
struct ServeAttachmentOptions: ParsableArguments {
    @Option(help: "The largest attachment accepted, in MiB (PUT /attachments/<sha256>); a larger one is refused with 413.")
    var attachmentMaxMib: Int = 256

    func validate() throws {
        guard (1...1_048_576).contains(attachmentMaxMib) else { throw ValidationError("--attachment-max-mib must be within 1...1048576") }
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
            let tables = try PostgresAttachmentStore(postgres.connector, schema: postgres.schema)
            try await tables.prepare()
            store = tables
        } else {
            guard let database, database != ":memory:" else { return nil }
            store = try DirectoryAttachmentStore(besideDatabase: database)
        }
        return SyncHTTPServer.Attachments(store: store, maxBytes: Int64(attachmentMaxMib) << 20)
    }
}
