import FieldMerge

/// Moving a store's file to a newer version of its schema (Specs/schema.md, "Evolution").
extension Store {
    /// The schema a file was made with: its lines and version (1 for files from before versions).
    static func storedSchema(_ database: Database) throws(StoreError) -> (lines: [String], version: Int) {
        let rows = try sqlite { () throws(SQLiteError) in
            try database.rows("SELECT \"key\", \"value\" FROM \"__fm_state\" WHERE \"key\" IN ('schema', 'schemaVersion')")
        }
        var lines: [String]?, version = 1
        for row in rows where row.count == 2 {
            switch (row[0], row[1]) {
            case (.text("schema"), .text(let text)): lines = text.split(separator: "\n").map(String.init)
            case (.text("schemaVersion"), .integer(let number)): version = Int(number)
            default: break
            }
        }
        guard let lines else { throw StoreError(.corrupt, "the store's state lacks 'schema'") }
        return (lines, version)
    }

    /// Checks the file's schema against `schema` and, when `schema` is a newer version whose
    /// changes a store makes on its own, migrates the file in one transaction.
    ///
    /// - Returns: The changes made (empty when the file already has this schema).
    /// - Throws: ``StoreError/Code/schemaMismatch`` naming what differs: a file made with a
    ///   newer version, a changed schema under the same version, or a change no store makes
    ///   on its own (a removed field or entity, a moved field, a changed type).
    static func migrate(_ database: Database, to schema: Schema, readOnly: Bool) throws(StoreError) -> [SchemaChange] {
        let stored = try storedSchema(database)
        let expected = SchemaOutline(schema).lines
        let changes: [SchemaChange]
        do {
            changes = try SchemaMigration.plan(lines: stored.lines, version: stored.version, to: schema)
        } catch {
            throw StoreError(error.isDamaged ? .corrupt : .schemaMismatch, error.message)
        }
        if changes.isEmpty && stored.version == schema.version { return [] }
        guard !readOnly else {
            throw StoreError(.schemaMismatch, "the file has schema version \(stored.version); open it writable once to migrate it to \(schema.version)")
        }
        do {
            try database.transaction(.immediate) {
                let old = SchemaOutline(lines: stored.lines) ?? SchemaOutline(schema)
                var migration = Migration(database: database, schema: schema, old: old)
                try migration.run(changes)
                try database.run("UPDATE \"__fm_state\" SET \"value\" = ? WHERE \"key\" = 'schema'", [.text(expected.joined(separator: "\n"))])
                try database.run("INSERT OR REPLACE INTO \"__fm_state\" (\"key\", \"value\") VALUES ('schemaVersion', ?)",
                                 [.integer(Int64(schema.version))])
                if changes.contains(where: \.refetches) {
                    // The server answered the older version without these fields and entities:
                    // the next sync catches up from the start and brings their values.
                    try database.run("UPDATE \"__fm_state\" SET \"value\" = 0 WHERE \"key\" = 'maxRevision'")
                }
            }
        } catch let error as StoreError {
            throw error
        } catch let error as SQLiteError {
            throw StoreError(error)
        } catch {
            throw StoreError(.corrupt, "migrating to schema version \(schema.version): \(error)")
        }
        return changes
    }
}

/// One migration's steps, inside its transaction. Entity renames come first, then field
/// renames, added fields and added entities; rule changes need nothing stored.
struct Migration {
    let database: Database
    let schema: Schema
    let old: SchemaOutline
    /// The tables whose metadata columns and capture objects name entities.
    static let entityColumns = [
        "__fm_outbox", "__fm_tombstones", "__fm_idmap", "__fm_parked", "__fm_captured", "__fm_conflicts", "__fm_aside",
    ]

    mutating func run(_ changes: [SchemaChange]) throws {
        let steps = SchemaMigration.Steps(changes, in: schema)
        for (from, to) in steps.entityRenames { try renameEntity(from, to) }
        for (entity, from, to) in steps.fieldRenames { try renameField(entity, from, to) }
        for (entity, count) in steps.addedFields { try addFields(entity, count: count) }
        for entity in steps.addedEntities { try database.execute(StoreSchema.createTable(entity)) }
        for (entity, field) in steps.retiredFields { try retireField(entity, field) }
        for (entity, field, from) in steps.convertedFields { try convertField(entity, field, from: from) }
        for entity in steps.retiredEntities { try retireEntity(entity) }
        for entity in schema.entities {
            for index in entity.referenceIndexes { try database.execute(index) }
        }
    }

    /// Drops the capture triggers of an entity (the store creates them anew when it opens).
    func dropTriggers(_ entity: String) throws {
        for what in ["insert", "id", "update", "delete"] {
            try database.execute("DROP TRIGGER IF EXISTS \(Database.quote("__fm_capture_\(what)_\(entity)"))")
        }
    }

    func shadowExists(_ entity: String) throws -> Bool {
        try database.scalar("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name = ?", [.text("__fm_shadow_\(entity)")])
            == .integer(1)
    }

    func dropReferenceIndexes(_ entity: String) throws {
        for field in old.entities.first(where: { $0.name == entity })?.fields ?? [] where field.target != nil {
            try database.execute("DROP INDEX IF EXISTS \(Database.quote("__fm_ref_\(entity)_\(field.name)"))")
        }
    }

    func renameEntity(_ from: String, _ to: String) throws {
        try dropTriggers(from)
        try dropReferenceIndexes(from)
        try database.execute("ALTER TABLE \(Database.quote(from)) RENAME TO \(Database.quote(to))")
        if try shadowExists(from) {
            try database.execute("ALTER TABLE \(Database.quote("__fm_shadow_\(from)")) RENAME TO \(Database.quote("__fm_shadow_\(to)"))")
        }
        for table in Self.entityColumns {
            try database.run("UPDATE \(Database.quote(table)) SET \"entity\" = ? WHERE \"entity\" = ?", [.text(to), .text(from)])
        }
    }

    func renameField(_ entity: String, _ from: String, _ to: String) throws {
        try dropTriggers(entity)
        try database.execute("DROP INDEX IF EXISTS \(Database.quote("__fm_ref_\(entity)_\(from)"))")
        let rename = "RENAME COLUMN \(Database.quote(from)) TO \(Database.quote(to))"
        try database.execute("ALTER TABLE \(Database.quote(entity)) \(rename)")
        if try shadowExists(entity) { try database.execute("ALTER TABLE \(Database.quote("__fm_shadow_\(entity)")) \(rename)") }
        try database.run("UPDATE \"__fm_conflicts\" SET \"field\" = ? WHERE \"entity\" = ? AND \"field\" = ?", [.text(to), .text(entity), .text(from)])
    }

    /// Adds the last `count` fields of `entity`: a column each (with the field's default in
    /// every row), and in every row's and tombstone's stamps and ancestor a stamp older than
    /// any edit and the default value.
    func addFields(_ entity: Entity, count: Int) throws {
        try dropTriggers(entity.name)
        let oldCount = entity.fields.count - count
        let added = Array(entity.fields[oldCount...])
        let shadow = try shadowExists(entity.name)
        for (offset, field) in added.enumerated() {
            let definition = entity.columnDefinitions[oldCount + offset + 1]  // after "id"
            try database.execute("ALTER TABLE \(Database.quote(entity.name)) ADD COLUMN \(definition)")
            if shadow {
                try database.execute("ALTER TABLE \(Database.quote("__fm_shadow_\(entity.name)")) ADD COLUMN \(Database.quote(field.name)) \(field.type.sqliteColumnType)")
            }
            guard field.defaultValue != .null else { continue }
            for table in [entity.name] + (shadow ? ["__fm_shadow_\(entity.name)"] : []) {
                let statement = try database.statement("UPDATE \(Database.quote(table)) SET \(Database.quote(field.name)) = ?")
                try statement.bindField(field.defaultValue, at: 1)
                try statement.execute()
            }
        }
        let before = Entity(entity.name, fields: Array(entity.fields.prefix(oldCount)))
        let grow = BlobGrowth(before: before, after: entity, added: added)
        for table in [entity.name] + (shadow ? ["__fm_shadow_\(entity.name)"] : []) {
            try rewrite(table: table, key: "id", filter: nil, grow)
        }
        try rewrite(table: "__fm_tombstones", key: "id", filter: entity.name, grow)
        try rewriteAside(entity.name, grow)
    }

    /// Empties a retired field: its column in every row (and captured shadow row) becomes
    /// null, and its stamp and ancestor value in every row and tombstone none and null, as
    /// every answer of the server will now have it; pending edits of it are dropped.
    func retireField(_ entity: Entity, _ field: Int) throws {
        try dropTriggers(entity.name)
        let column = Database.quote(entity.fields[field].name)
        let shadow = try shadowExists(entity.name)
        for table in [entity.name] + (shadow ? ["__fm_shadow_\(entity.name)"] : []) {
            try database.execute("UPDATE \(Database.quote(table)) SET \(column) = NULL")
        }
        let empty = BlobRetire(entity: entity, field: field)
        for table in [entity.name] + (shadow ? ["__fm_shadow_\(entity.name)"] : []) {
            try rewrite(table: table, key: "id", filter: nil, empty)
        }
        try rewrite(table: "__fm_tombstones", key: "id", filter: entity.name, empty)
        try rewriteAside(entity.name, empty)
        // Pending edits of the field are not sent; a record left with none leaves the outbox.
        let (table, pending, revision) = (Database.quote(entity.name), StoreSchema.pendingColumn, StoreSchema.revisionColumn)
        try database.run("UPDATE \(table) SET \"\(pending)\" = \"\(pending)\" & ?", [.integer(~(Int64(1) << Int64(field)))])
        try database.run("""
            DELETE FROM "__fm_outbox" WHERE "entity" = ? AND "id" IN
              (SELECT "id" FROM \(table) WHERE "\(pending)" = 0 AND "\(revision)" IS NOT NULL)
            """, [.text(entity.name)])
    }

    /// Empties a retired entity: its rows and captured rows, its tombstones, pending
    /// changes, temporary ids, refused changes and conflict history; the store then refuses
    /// writes to it (``StoreCapture`` guards the table against plain SQL too).
    func retireEntity(_ entity: Entity) throws {
        try dropTriggers(entity.name)
        try database.execute("DELETE FROM \(Database.quote(entity.name))")
        if try shadowExists(entity.name) { try database.execute("DELETE FROM \(Database.quote("__fm_shadow_\(entity.name)"))") }
        for table in Self.entityColumns {
            try database.run("DELETE FROM \(Database.quote(table)) WHERE \"entity\" = ?", [.text(entity.name)])
        }
    }

    /// Gives a field its new type through the app's conversion (``Field/convertedFrom``):
    /// every value in rows, captured rows, ancestors and tombstones' ancestors; stamps and
    /// pending edits stay. The column is made anew with the new type (SQLite keeps a
    /// column's declared type), at the end of the table.
    func convertField(_ entity: Entity, _ field: Int, from oldType: FieldType) throws {
        try dropTriggers(entity.name)
        let shadow = try shadowExists(entity.name)
        for table in [entity.name] + (shadow ? ["__fm_shadow_\(entity.name)"] : []) {
            do {
                try ColumnConversion(database: database, table: table, entity: entity, field: field, from: oldType).run()
            } catch let failure as ColumnConversion.Failure {
                throw StoreError(failure.isCorrupt ? .corrupt : .invalidRecord, failure.message, entity: failure.entity, id: failure.id)
            }
        }
        var before = entity
        before.fields[field].type = oldType
        let convert = BlobConvert(before: before, after: entity, field: field)
        for table in [entity.name] + (shadow ? ["__fm_shadow_\(entity.name)"] : []) {
            try rewrite(table: table, key: "id", filter: nil, convert)
        }
        try rewrite(table: "__fm_tombstones", key: "id", filter: entity.name, convert)
        try rewriteAside(entity.name, convert)
    }

    /// Rewrites the stamps and ancestor of every row of `table` (of entity `filter` in the
    /// tombstones table) for the added, retired or converted fields.
    private func rewrite(table: String, key: String, filter: String?, _ grow: some BlobRewrite) throws {
        let isTombstones = filter != nil
        let (stampsColumn, ancestorColumn) = isTombstones ? ("stamps", "ancestor") : (StoreSchema.stampsColumn, StoreSchema.ancestorColumn)
        let select = "SELECT \"id\", \"\(stampsColumn)\", \"\(ancestorColumn)\" FROM \(Database.quote(table))"
            + (isTombstones ? " WHERE \"entity\" = ?" : "")
        let rows = try database.rows(select, filter.map { [.text($0)] } ?? [])
        let update = try database.statement(
            "UPDATE \(Database.quote(table)) SET \"\(stampsColumn)\" = ?, \"\(ancestorColumn)\" = ? WHERE \"id\" = ?"
                + (isTombstones ? " AND \"entity\" = ?" : ""))
        for row in rows {
            guard case .integer(let id) = row[0] else { continue }
            // A row inserted with plain SQL and not yet taken in has no stamps yet.
            guard case .blob(let stamps) = row[1], !stamps.isEmpty else { continue }
            try update.bind(try grow.stamps(stamps, id: id), at: 1)
            if case .blob(let ancestor) = row[2] { try update.bind(try grow.ancestor(ancestor, id: id), at: 2) } else { try update.bindNull(at: 2) }
            try update.bind(id, at: 3)
            if let filter { try update.bind(filter, at: 4) }
            try update.execute()
            update.reset()
        }
    }
}

extension Migration {
    /// Rewrites the records and ancestors of `entity`'s changes kept aside (both
    /// `RecordCoding` ancestors) for the added, retired or converted fields.
    func rewriteAside(_ entity: String, _ rewrite: some BlobRewrite) throws {
        let rows = try database.rows("SELECT \"seq\", \"id\", \"record\", \"ancestor\" FROM \"__fm_aside\" WHERE \"entity\" = ?", [.text(entity)])
        for row in rows {
            guard case .integer(let seq) = row[0], case .integer(let id) = row[1], case .blob(let record) = row[2] else { continue }
            var ancestor = SQLValue.null
            if case .blob(let bytes) = row[3] { ancestor = .blob(try rewrite.ancestor(bytes, id: id)) }
            try database.run(
                "UPDATE \"__fm_aside\" SET \"record\" = ?, \"ancestor\" = ? WHERE \"seq\" = ?",
                [.blob(try rewrite.ancestor(record, id: id)), ancestor, .integer(seq)])
        }
    }
}

extension SchemaChange {
    /// Whether a store that made this change must catch up from the start: an added field or
    /// entity has values on the server that the older version was not sent.
    var refetches: Bool {
        switch kind {
        case .addField, .addEntity: true
        default: false
        }
    }
}
