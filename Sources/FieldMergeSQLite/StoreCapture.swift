import FieldMerge

/// The SQL that captures writes made to the app's tables with plain SQL, through the store's
/// own connection or any other connection to the file (another process, GRDB), with
/// triggers that need nothing but SQLite.
///
/// The store's own transactions hold a row in `__fm_writer`, invisible to every other
/// connection (it is written and deleted inside the transaction), and the triggers skip
/// writes that see it. Any other write is noted in `__fm_captured` (entity, id, and whether
/// the first captured write was an insert) and, for updates and deletes, the row as it was
/// before is kept once in the entity's shadow table `__fm_shadow_<entity>`. The store takes
/// the captured writes in at the start of its next transaction: they get fresh stamps and
/// are queued like its own edits (``Store/captureExternalWrites()``).
///
/// An insert made with plain SQL gets the next temporary id instead of the id it named (the
/// server gives permanent ids); an update that changes a record's id is refused.
enum StoreCapture {
    static let writerTable = "__fm_writer"
    static let capturedTable = "__fm_captured"

    static let metadataTables = """
        CREATE TABLE IF NOT EXISTS "__fm_writer" ("marker" INTEGER PRIMARY KEY);
        CREATE TABLE IF NOT EXISTS "__fm_captured" ("seq" INTEGER PRIMARY KEY AUTOINCREMENT, "entity" TEXT NOT NULL,
          "id" INTEGER NOT NULL, "inserted" INTEGER NOT NULL, UNIQUE ("entity", "id"))
        """

    /// What every capture trigger's name begins with.
    static let triggerPrefix = "__fm_capture_"

    /// The capture triggers of `entity`, for dropping them inside a transaction of the store
    /// that writes many rows (where they would only cost time: its own writes are skipped).
    static func triggerNames(_ entity: Entity) -> [String] {
        ["insert", "id", "update", "delete"].map { Database.quote("\(triggerPrefix)\($0)_\(entity.name)") }
    }

    static func shadowName(_ entity: Entity) -> String { Database.quote("__fm_shadow_\(entity.name)") }

    /// The shadow table, the three triggers, for one entity (idempotent).
    static func statements(for entity: Entity) -> [String] {
        let table = Database.quote(entity.name)
        let shadow = shadowName(entity)
        let fields = entity.fields.map { Database.quote($0.name) }
        let meta = [StoreSchema.stampsColumn, StoreSchema.pendingColumn, StoreSchema.revisionColumn, StoreSchema.ancestorColumn]
            .map { "\"\($0)\"" }
        let shadowColumns = ["\"id\" INTEGER PRIMARY KEY"] + entity.fields.map { "\(Database.quote($0.name)) \($0.type.sqliteColumnType)" }
            + ["\"\(StoreSchema.stampsColumn)\" BLOB", "\"\(StoreSchema.pendingColumn)\" INTEGER",
               "\"\(StoreSchema.revisionColumn)\" INTEGER", "\"\(StoreSchema.ancestorColumn)\" BLOB"]
        // Columns by name: a migration adds columns at the end of the table and its shadow.
        let shadowList = (["\"id\""] + fields + meta).joined(separator: ", ")
        let old = (["\"id\""] + fields + meta).map { "OLD.\($0)" }.joined(separator: ", ")
        // Entity names are ASCII letters, digits and underscores (the schema checks), so the
        // name is safe inside a string literal.
        let name = "'\(entity.name)'"
        let foreign = "NOT EXISTS (SELECT 1 FROM \"\(writerTable)\")"
        let nextID = "(SELECT \"value\" + 1 FROM \"__fm_state\" WHERE \"key\" = 'nextTemporaryID')"
        let trigger = { (what: String) in Database.quote("\(triggerPrefix)\(what)_\(entity.name)") }
        if entity.retired {
            // A retired entity's table stays empty: plain SQL cannot fill it either.
            return [
                "CREATE TABLE IF NOT EXISTS \(shadow) (\(shadowColumns.joined(separator: ", ")))",
                """
                CREATE TRIGGER IF NOT EXISTS \(trigger("insert")) BEFORE INSERT ON \(table) BEGIN
                  SELECT RAISE(ABORT, 'FieldMerge: entity \(entity.name) is retired: it is no longer synced and stays empty');
                END
                """,
            ]
        }
        return [
            "CREATE TABLE IF NOT EXISTS \(shadow) (\(shadowColumns.joined(separator: ", ")))",
            """
            CREATE TRIGGER IF NOT EXISTS \(trigger("insert")) BEFORE INSERT ON \(table)
            WHEN NEW."\(StoreSchema.stampsColumn)" IS NULL AND \(foreign) BEGIN
              UPDATE "__fm_state" SET "value" = "value" - 1 WHERE "key" = 'nextTemporaryID';
              INSERT INTO \(table) ("id", \(fields.joined(separator: ", ")), "\(StoreSchema.stampsColumn)", "\(StoreSchema.pendingColumn)")
                VALUES (\(nextID), \(fields.map { "NEW.\($0)" }.joined(separator: ", ")), x'', 0);
              INSERT OR IGNORE INTO "\(capturedTable)" ("entity", "id", "inserted") VALUES (\(name), \(nextID), 1);
              SELECT RAISE(IGNORE);
            END
            """,
            """
            CREATE TRIGGER IF NOT EXISTS \(trigger("id")) BEFORE UPDATE OF "id" ON \(table)
            WHEN NEW."id" IS NOT OLD."id" AND \(foreign) BEGIN
              SELECT RAISE(ABORT, 'FieldMerge: record ids are given by the server and cannot be changed');
            END
            """,
            """
            CREATE TRIGGER IF NOT EXISTS \(trigger("update")) AFTER UPDATE ON \(table)
            WHEN NEW."\(StoreSchema.stampsColumn)" IS OLD."\(StoreSchema.stampsColumn)" AND \(foreign) BEGIN
              INSERT OR IGNORE INTO \(shadow) (\(shadowList)) VALUES (\(old));
              INSERT OR IGNORE INTO "\(capturedTable)" ("entity", "id", "inserted") VALUES (\(name), OLD."id", 0);
            END
            """,
            """
            CREATE TRIGGER IF NOT EXISTS \(trigger("delete")) AFTER DELETE ON \(table) WHEN \(foreign) BEGIN
              INSERT OR IGNORE INTO \(shadow) (\(shadowList)) VALUES (\(old));
              INSERT OR IGNORE INTO "\(capturedTable)" ("entity", "id", "inserted") VALUES (\(name), OLD."id", 0);
            END
            """,
        ]
    }
}

/// How a bulk write of the store's own took the capture triggers out of the way
/// (``Store/withoutCaptureTriggers(_:)``).
enum CaptureTriggersOff: Equatable {
    /// It did not (yet).
    case no
    /// This connection's triggers are off (the database has no triggers but the store's).
    case switchedOff
    /// The capture triggers were dropped inside the transaction (the app has triggers too).
    case dropped
}
