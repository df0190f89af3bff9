import FieldMerge
import FieldMergeServer

/// One entity's table in PostgreSQL, and the SQL the storage runs on it. Every name in it is
/// quoted by ``PostgresIdentifier``; every value is a bind parameter (`$1`, `$2`, ...).
struct PostgresServerTable {
    let entity: Entity
    /// The entity's position in the schema, which names its constraints and indexes.
    let position: Int
    /// The quoted PostgreSQL schema.
    private let schema: String
    /// The statements on one row by id (`$1`), over the schema-qualified, quoted table.
    /// `sql.columns` is the columns a row is read from and written to, in the order
    /// ``PostgresServerStorage/decodeRow(_:_:fieldRevisions:)`` reads them: the id, the
    /// fields, the stamps, the revisions and the root (`ServerRow/root`).
    let sql: EntitySQL
    /// The upsert of records and their log entries, around the rows' parameters
    /// (``insertAndLog(rows:)``).
    private let insertHead: String, insertTail: String
    /// ``insertTail`` with the log's insert as a `WITH` part (`logged`) instead of the
    /// statement itself, for a statement that goes on after it (``leadingInsertAndLog(rows:fresh:)``).
    private let leadingTail: String
    /// ``leadingTail`` without the conflict clauses, for fresh records.
    private let leadingFreshTail: String
    /// The upsert of a run of records and their log entries with one array parameter per
    /// column (bindings: the entity's name, then ``columnElements``' arrays, one element per
    /// record): the same text for every size of run, so it is prepared once.
    let insertAndLogColumns: String
    /// ``insertAndLogColumns`` for records no row and no log entry has yet (created under ids
    /// this transaction was given, ``PendingRecords/fresh``): plain inserts, which PostgreSQL
    /// runs faster than an upsert's check for a conflict.
    let insertFreshColumns: String
    /// ``insertAndLogColumns`` up to its tail.
    private let columnsHead: String
    /// What each column of ``sql``'s `columns` is bound as in ``insertAndLogColumns``.
    let columnElements: [PostgresColumnArray.Element]
    /// The delete of records with their tombstones and log entries, after the rows' parameters
    /// (``deleteAndLog(rows:)``).
    private let deleteTail: String
    /// `select` and `exists` for the ids of a `bigint[]` (`$1`).
    let selectAny: String, existsAny: String
    /// The records of this entity alive and changed in a window of revisions, in log order
    /// (bindings: entity, after, through); the same for deleted ones (id, revision, stamp,
    /// root).
    let changedAlive: String, changedDeleted: String
    /// `CREATE TABLE`, without foreign keys (added once every table exists).
    let createTable: String
    /// `ALTER TABLE ... ADD CONSTRAINT ... FOREIGN KEY` for each reference, checked at commit,
    /// and `CREATE INDEX` on each reference column.
    private(set) var foreignKeys: [String]
    private(set) var referenceIndexes: [String]

    init(_ entity: Entity, position: Int, schema: String) throws(PostgresIdentifierError) {
        self.entity = entity
        self.position = position
        self.schema = schema
        var fieldColumns: [String] = []
        for field in entity.fields { fieldColumns.append(try PostgresIdentifier.quote(field.name)) }
        sql = EntitySQL(
            table: schema + "." + (try PostgresIdentifier.quote(entity.name)), fieldColumns: fieldColumns,
            metadata: ServerRow.metadataColumns, parameter: "$1")
        let table = sql.table, columnList = sql.columnList
        let log = schema + ".\"__fm_log\"", deleted = schema + ".\"__fm_deleted\""
        let window = "WHERE l.\"entity\" = $1 AND l.\"revision\" > $2 AND l.\"revision\" <= $3 ORDER BY l.\"revision\", l.\"id\""
        changedAlive = "SELECT \(sql.columnList(alias: "t")) FROM \(log) l JOIN \(table) t ON t.\"id\" = l.\"id\" " + window
        changedDeleted = "SELECT l.\"id\", d.\"revision\", d.\"stamp\", d.\"root\" FROM \(log) l JOIN \(deleted) d "
            + "ON d.\"entity\" = l.\"entity\" AND d.\"id\" = l.\"id\" " + window
        let logEntry = "INSERT INTO \(log) (\"entity\", \"id\", \"revision\") "
        let logConflict = " ON CONFLICT (\"entity\", \"id\") DO UPDATE SET \"revision\" = EXCLUDED.\"revision\""
        insertHead = "WITH written AS (INSERT INTO \(table) (\(columnList)) VALUES "
        insertTail = " \(sql.onConflictUpdate) RETURNING \"id\", \"__fm_revision\") "
            + logEntry + "SELECT $1, \"id\", \"__fm_revision\" FROM written" + logConflict
        leadingTail = " \(sql.onConflictUpdate) RETURNING \"id\", \"__fm_revision\"), logged AS ("
            + logEntry + "SELECT $1, \"id\", \"__fm_revision\" FROM written" + logConflict + " RETURNING 1)"
        leadingFreshTail = " RETURNING \"id\", \"__fm_revision\"), logged AS (" + logEntry + "SELECT $1, \"id\", \"__fm_revision\" FROM written RETURNING 1)"
        let freshTail = " RETURNING \"id\", \"__fm_revision\") " + logEntry + "SELECT $1, \"id\", \"__fm_revision\" FROM written"
        let elements: [PostgresColumnArray.Element] = [.int8] + entity.fields.map { PostgresColumnArray.Element($0.type) }
            + [.bytea, .int8, .int8, .bytea, .int8]
        precondition(elements.count == sql.columns.count, "a column array per column")
        columnElements = elements
        var arrays: [String] = [], selected: [String] = []
        for (index, element) in elements.enumerated() {
            arrays.append("$\(index + 2)::" + Self.arrayTypeName(element))
            // A text set travels as the text of an array, cast back here.
            selected.append("u.\"c\(index)\"" + (element == .textSet ? "::TEXT[]" : ""))
        }
        columnsHead = "WITH written AS (INSERT INTO \(table) (\(columnList)) SELECT " + selected.joined(separator: ", ")
            + " FROM unnest(" + arrays.joined(separator: ", ") + ") AS u("
            + elements.indices.map { "\"c\($0)\"" }.joined(separator: ", ") + ")"
        insertAndLogColumns = columnsHead + insertTail
        insertFreshColumns = columnsHead + freshTail
        selectAny = "SELECT \(columnList) FROM \(table) WHERE \"id\" = ANY($1)"
        deleteTail = "), gone AS (DELETE FROM \(table) t USING input WHERE t.\"id\" = input.\"id\" RETURNING t.\"id\", t.\"__fm_root\"), "
            + "tombstone AS (INSERT INTO \(deleted) (\"entity\", \"id\", \"revision\", \"stamp\", \"root\") "
            + "SELECT $1, i.\"id\", i.\"revision\", i.\"stamp\", (SELECT g.\"__fm_root\" FROM gone g WHERE g.\"id\" = i.\"id\") FROM input i "
            + "ON CONFLICT (\"entity\", \"id\") DO UPDATE SET "
            + "\"revision\" = EXCLUDED.\"revision\", \"stamp\" = EXCLUDED.\"stamp\", \"root\" = EXCLUDED.\"root\") "
            + logEntry + "SELECT $1, \"id\", \"revision\" FROM input" + logConflict
        existsAny = "SELECT \"id\" FROM \(table) WHERE \"id\" = ANY($1)"

        var definitions = ["\"id\" BIGINT PRIMARY KEY"]
        for (index, field) in entity.fields.enumerated() {
            definitions.append("\(sql.fieldColumn(index)) \(field.type.postgresColumnType)")
        }
        definitions += ServerRow.metadataDefinitions(blob: "BYTEA", integer: "BIGINT")
        createTable = "CREATE TABLE \(table) (" + definitions.joined(separator: ", ") + ")"
        foreignKeys = []
        referenceIndexes = []
        var keys: [String] = [], indexes: [String] = []
        for index in entity.fields.indices {
            guard let foreignKey = try foreignKey(field: index) else { continue }
            keys.append(foreignKey)
            indexes.append(referenceIndex(field: index, name: "__fm_ref_\(position)_\(index)"))
        }
        (foreignKeys, referenceIndexes) = (keys, indexes)
    }

    /// The schema-qualified, quoted table name.
    var table: String { sql.table }

    /// `ALTER TABLE ... ADD CONSTRAINT ... FOREIGN KEY` for field `field`, checked at commit;
    /// nil when it is no reference.
    func foreignKey(field index: Int) throws(PostgresIdentifierError) -> String? {
        guard let target = entity.fields[index].type.referenceTarget else { return nil }
        // Short generated names: entity and field names may already use the 63 bytes.
        return "ALTER TABLE \(table) ADD CONSTRAINT \"__fm_fk_\(position)_\(index)\" FOREIGN KEY (\(sql.fieldColumn(index))) "
            + "REFERENCES \(schema).\(try PostgresIdentifier.quote(target)) (\"id\") DEFERRABLE INITIALLY DEFERRED"
    }

    /// `CREATE INDEX` named `name` (a generated, safe name) on field `field`'s column.
    func referenceIndex(field index: Int, name: String) -> String {
        "CREATE INDEX IF NOT EXISTS \"\(name)\" ON \(table) (\(sql.fieldColumn(index)))"
    }

    /// Writes `rows` records and their log entries in one statement (bindings: the entity's
    /// name, then each record's columns), replacing records that exist.
    func insertAndLog(rows: Int) -> String {
        insertHead + Self.rows(rows, width: sql.columns.count) + insertTail
    }

    /// The same writes as the first parts of a longer statement: `WITH written AS (...),
    /// logged AS (...)`, to which the caller adds `, ` and its own parts (numbering its
    /// parameters after the rows'). With `rows` nil, ``insertAndLogColumns``' form, or with
    /// `fresh`, ``insertFreshColumns``'.
    func leadingInsertAndLog(rows: Int?, fresh: Bool = false) -> String {
        guard let rows else { return columnsHead + (fresh ? leadingFreshTail : leadingTail) }
        return insertHead + Self.rows(rows, width: sql.columns.count) + leadingTail
    }

    /// The SQL name of an array of `element`s.
    static func arrayTypeName(_ element: PostgresColumnArray.Element) -> String {
        switch element {
        case .int8: "BIGINT[]"
        case .float8: "DOUBLE PRECISION[]"
        case .bool: "BOOLEAN[]"
        case .text, .textSet: "TEXT[]"
        case .bytea: "BYTEA[]"
        }
    }

    /// Deletes `rows` records, writes their tombstones (each keeping its record's root) and
    /// their log entries in one statement (bindings: the entity's name, then each record's
    /// id, revision and tombstone stamp).
    func deleteAndLog(rows: Int) -> String {
        "WITH input (\"id\", \"revision\", \"stamp\") AS (VALUES " + Self.rows(rows, width: 3, types: ["BIGINT", "BIGINT", "BYTEA"]) + deleteTail
    }

    /// `VALUES` rows of `width` parameters each, numbered from `$first` (`$2` after the
    /// entity's name), each cast to `types` when given.
    static func rows(_ count: Int, width: Int, types: [String] = [], first: Int = 2) -> String {
        var sql = ""
        sql.reserveCapacity(count * width * 8)
        var parameter = first
        for row in 0..<count {
            sql += row == 0 ? "(" : ", ("
            for column in 0..<width {
                if column > 0 { sql += ", " }
                sql += "$" + String(parameter)
                if !types.isEmpty { sql += "::" + types[column] }
                parameter += 1
            }
            sql += ")"
        }
        return sql
    }

    /// The ids of the alive records whose field `field` holds `$1`, ascending.
    func referencing(field: Int) -> String { sql.referencing(field: field) }
}

extension FieldType {
    /// The PostgreSQL column type of a field of this type: dates as integer milliseconds,
    /// text sets as `text[]` (sorted, no duplicates).
    var postgresColumnType: String {
        switch self {
        case .integer, .date, .reference: "BIGINT"
        case .bool: "BOOLEAN"
        case .real: "DOUBLE PRECISION"
        case .text, .attachment: "TEXT"
        case .textSet: "TEXT[]"
        case .blob: "BYTEA"
        }
    }
}
