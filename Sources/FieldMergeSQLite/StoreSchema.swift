import FieldMerge

/// The SQL side of a schema: table definitions, column types, the canonical description
/// stored in the file to recognise a schema change.
enum StoreSchema {
    /// Columns the store adds to every entity table, after the entity's own fields.
    /// Field names cannot start with `__`, so they never collide.
    static let stampsColumn = "__fm_stamps"
    static let pendingColumn = "__fm_pending"
    static let revisionColumn = "__fm_revision"
    static let ancestorColumn = "__fm_ancestor"

    /// `CREATE TABLE` for one entity: an integer primary key, a typed column per field,
    /// foreign keys for references (checked at commit, so a transaction may write a child
    /// before its parent), and the sync metadata columns.
    static func createTable(_ entity: Entity) -> String {
        var columns = entity.columnDefinitions
        columns += [
            "\"\(stampsColumn)\" BLOB NOT NULL",
            "\"\(pendingColumn)\" INTEGER NOT NULL DEFAULT 0",
            "\"\(revisionColumn)\" INTEGER",
            "\"\(ancestorColumn)\" BLOB",
        ]
        return "CREATE TABLE \(Database.quote(entity.name)) (\n  " + columns.joined(separator: ",\n  ") + "\n)"
    }

    /// The store's own tables.
    static let metadataTables = """
        CREATE TABLE "__fm_state" ("key" TEXT PRIMARY KEY, "value" ANY) STRICT;
        CREATE TABLE "__fm_outbox" ("seq" INTEGER PRIMARY KEY AUTOINCREMENT, "entity" TEXT NOT NULL,
          "id" INTEGER NOT NULL, UNIQUE ("entity", "id"));
        CREATE TABLE "__fm_tombstones" ("entity" TEXT NOT NULL, "id" INTEGER NOT NULL,
          "deleted" BLOB NOT NULL, "stamps" BLOB NOT NULL, "pending" INTEGER NOT NULL,
          "revision" INTEGER, "ancestor" BLOB, PRIMARY KEY ("entity", "id")) WITHOUT ROWID;
        CREATE TABLE "__fm_idmap" ("entity" TEXT NOT NULL, "temporary" INTEGER NOT NULL,
          "permanent" INTEGER NOT NULL, PRIMARY KEY ("entity", "temporary")) WITHOUT ROWID;
        \(parkedTable);
        """

    /// Changes the server refused as they are, kept aside with its reason (added to
    /// existing stores when they open).
    static let parkedTable = """
        CREATE TABLE IF NOT EXISTS "__fm_parked" ("entity" TEXT NOT NULL, "id" INTEGER NOT NULL,
          "code" TEXT NOT NULL, "message" TEXT NOT NULL, "since" INTEGER NOT NULL, PRIMARY KEY ("entity", "id")) WITHOUT ROWID
        """

    /// Unsynced changes of records that left what the device may hold, kept aside and never
    /// sent (Specs/store.md, "Leaving a scope"; ``Store/keptAside()``): the local record and
    /// the ancestor as `RecordCoding` ancestors, what would have been sent, and when it left.
    /// Several entries may name one record (it came back, was edited and left again). Added
    /// to existing stores when they open.
    static let asideTable = """
        CREATE TABLE IF NOT EXISTS "__fm_aside" ("seq" INTEGER PRIMARY KEY AUTOINCREMENT, "entity" TEXT NOT NULL,
          "id" INTEGER NOT NULL, "kind" TEXT NOT NULL, "fields" INTEGER NOT NULL, "record" BLOB NOT NULL, "ancestor" BLOB,
          "since" INTEGER NOT NULL);
        CREATE INDEX IF NOT EXISTS "__fm_aside_record" ON "__fm_aside" ("entity", "id")
        """

    /// The roots of the server's scopes this device asks for beyond its user's grants
    /// (``Store/subscriptions()``, Specs/store.md "Subscriptions"). Added to existing stores
    /// when they open.
    static let subscriptionsTable = """
        CREATE TABLE IF NOT EXISTS "__fm_subscriptions" ("scope" TEXT NOT NULL, "root" INTEGER NOT NULL,
          "first" INTEGER NOT NULL, "ttl" INTEGER NOT NULL, "dropped" INTEGER, "denied" INTEGER NOT NULL,
          PRIMARY KEY ("scope", "root")) WITHOUT ROWID
        """

    /// The device's attachments (Specs/attachments.md, "The device"): per SHA-256 its size
    /// and media type, whether its upload is owed to the server (`owed`), the refusals of
    /// that upload (`attempts`, `nextAttempt` in milliseconds, `failure`), and the order of
    /// last access (`accessed`, a counter) that eviction follows. A row exists while the
    /// cache holds the file or its upload is owed. Added to existing stores when they open.
    static let attachmentsTable = """
        CREATE TABLE IF NOT EXISTS "__fm_attachments" ("sha256" TEXT PRIMARY KEY, "size" INTEGER NOT NULL,
          "mediaType" TEXT NOT NULL, "owed" INTEGER NOT NULL, "attempts" INTEGER NOT NULL DEFAULT 0,
          "nextAttempt" INTEGER NOT NULL DEFAULT 0, "failure" TEXT, "accessed" INTEGER NOT NULL) WITHOUT ROWID
        """
}
