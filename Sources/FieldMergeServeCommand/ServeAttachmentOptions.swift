import ArgumentParser
import FieldMerge
import FieldMergeServerHTTP
import FieldMergeServerSQLite

/// `fieldmerge serve`'s options for attachments (Specs/attachments.md): with `--db` and a
/// schema that has an attachment field, the bytes are kept in `<db>.attachments/`.
struct ServeAttachmentOptions: ParsableArguments {
    @Option(help: "The largest attachment accepted, in MiB (PUT /attachments/<sha256>); a larger one is refused with 413.")
    var attachmentMaxMib: Int = 256

    func validate() throws {
        guard (1...1_048_576).contains(attachmentMaxMib) else { throw ValidationError("--attachment-max-mib must be within 1...1048576") }
    }

    /// The attachment endpoints for the SQLite file at `database`, when `schema` has an
    /// attachment field; nil otherwise (and for PostgreSQL, whose byte store is not built yet).
    func load(schema: Schema, database: String?) throws -> SyncHTTPServer.Attachments? {
        guard let database, database != ":memory:",
            schema.entities.contains(where: { $0.fields.contains { $0.type == .attachment } })
        else { return nil }
        return SyncHTTPServer.Attachments(
            store: try DirectoryAttachmentStore(besideDatabase: database), maxBytes: Int64(attachmentMaxMib) << 20)
    }
}
