import FieldMerge

/// The SQL of one entity's table, built once from the schema. Identifiers are quoted;
/// values are always bound (`?` placeholders), never spliced.
final class EntityTable {
    let entity: Entity
    /// The statements on one row by id, over the columns
    /// `id, f1, ..., fn, stamps, pending, revision, ancestor`.
    let sql: EntitySQL
    /// `INSERT` of every column, or `UPDATE` of all but the id when the row exists.
    let upsert: String
    /// Every row, in no order (queries add theirs: by default permanent ids first in
    /// ascending order, then temporary ids from -1 down).
    let selectRows: String
    /// `select`, from the entity's shadow table (rows as they were before a plain-SQL write).
    let selectShadow: String
    /// The value kind each field accepts besides null, by position.
    let kinds: [ValueKind]
    /// Entities and fields that reference this entity, with their delete action.
    var referencedBy: [(entity: String, field: Int, action: ReferenceAction)] = []

    init(_ entity: Entity) {
        self.entity = entity
        let meta = [StoreSchema.stampsColumn, StoreSchema.pendingColumn, StoreSchema.revisionColumn,
                    StoreSchema.ancestorColumn].map { "\"\($0)\"" }
        sql = EntitySQL(
            table: Database.quote(entity.name), fieldColumns: entity.fields.map { Database.quote($0.name) }, metadata: meta,
            parameter: "?")
        upsert = "INSERT INTO \(sql.table) (\(sql.columnList)) VALUES (\(sql.placeholders)) " + sql.onConflictUpdate
        selectRows = "SELECT \(sql.columnList) FROM \(sql.table)"
        selectShadow = sql.select(from: StoreCapture.shadowName(entity))
        kinds = entity.fields.map(\.type.valueKind)
    }

    /// The quoted table name.
    var table: String { sql.table }

    /// Checks that a record fits the entity (what ``Record/validate(against:)`` does, without
    /// touching the schema's strings on the hot path).
    func check(_ record: Record) throws(StoreError) {
        guard record.values.count == kinds.count, record.stamps.count == kinds.count else {
            throw StoreError(.invalidRecord, "the record has \(record.values.count) values and \(record.stamps.count) stamps; the entity has \(kinds.count) fields", entity: entity.name, id: record.id)
        }
        for index in 0..<kinds.count {
            let kind = record.values[index].kind
            guard kind == kinds[index] || kind == .null else {
                throw StoreError(.invalidRecord, "field '\(entity.fields[index].name)' expects \(entity.fields[index].type.name), got \(kind.rawValue)", entity: entity.name, id: record.id)
            }
        }
    }

    /// Column positions in `select` (0-based) and binding positions in `upsert` (1-based).
    var fieldCount: Int { entity.fields.count }
    var stampsIndex: Int32 { Int32(fieldCount + 1) }
    var pendingIndex: Int32 { Int32(fieldCount + 2) }
    var revisionIndex: Int32 { Int32(fieldCount + 3) }
    var ancestorIndex: Int32 { Int32(fieldCount + 4) }
}
