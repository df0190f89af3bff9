import FieldMerge
import FieldMergeServer
import FieldMergeSQLiteDriver
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

extension TenantDirectory {
    /// A directory of SQLite files, one per tenant, `<folder>/<tenant>.sqlite` (what
    /// `fieldmerge-server serve --tenants DIR` serves): a request that only reads for a
    /// tenant without a file creates none and is answered as an empty data set at revision 0
    /// (by a server in memory); the first request that writes creates the file.
    ///
    /// - Parameters:
    ///   - folder: The folder of the files; it must exist.
    ///   - schema: Every tenant's schema (a file made with an older version migrates when
    ///     opened, and its server also answers that version's clients).
    ///   - options: Every tenant's server options.
    ///   - database: How each file is opened (durability, page cache).
    ///   - limits: How many files stay open, and for how long.
    ///   - attachments: When not nil, each tenant keeps the bytes of its attachments in a
    ///     ``DirectoryAttachmentStore`` beside its file (`<tenant>.sqlite.attachments/`),
    ///     hashing with this; `options.attachments` is then replaced per tenant.
    public static func sqliteFiles(
        in folder: String, schema: Schema, options: RevisionServer.Options = RevisionServer.Options(),
        database: Database.Options = Database.Options(), limits: Limits = Limits(), attachments: AttachmentHashing? = nil
    ) -> TenantDirectory {
        TenantDirectory(limits: limits) { tenant, need in
            let path = folder + "/" + tenant + ".sqlite"
            if need == .existing, access(path, F_OK) != 0 { return nil }
            var options = options
            if let attachments { options.attachments = try DirectoryAttachmentStore(besideDatabase: path, hashing: attachments) }
            return try RevisionServer(.file(path: path), schema: schema, options: options, database: database)
        } empty: {
            try RevisionServer(.memory, schema: schema, options: options)
        }
    }
}
