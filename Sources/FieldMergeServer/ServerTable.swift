import FieldMerge
import FieldMergeProtocol
import FieldMergeSQLite

/// One entity's table on the server: typed columns, the field stamps, the revision of the
/// last change, the revision that created the record, and the revision at which each field
/// last changed (NULL while every field changed at the record's revision), which merge mode
/// needs to tell a stale update's own fields from fields others changed since.
final class ServerTable {
    let entity: Entity
    let table: String
    let insert: String
    let select: String
    let delete: String
    /// The records of this entity alive and changed in a window of revisions, in log order
    /// (bindings: entity, after, through); the same for deleted ones (id, revision).
    let changedAlive: String
    let changedDeleted: String
    var referencedBy: [(entity: String, field: Int, action: ReferenceAction)] = []
    /// Whether any field references a record.
    let hasReferences: Bool
    /// The two hottest statements, kept here: cheaper than finding them by their SQL text.
    var selectStatement: Statement?
    var insertStatement: Statement?

    init(_ entity: Entity) {
        self.entity = entity
        table = Database.quote(entity.name)
        let columns = ["\"id\""] + entity.fields.map { Database.quote($0.name) }
            + ["\"__fm_stamps\"", "\"__fm_revision\"", "\"__fm_created\"", "\"__fm_fields\""]
        let joined = columns.map { "t." + $0 }.joined(separator: ", ")
        let window = "WHERE l.\"entity\" = ? AND l.\"revision\" > ? AND l.\"revision\" <= ? ORDER BY l.\"revision\", l.\"id\""
        changedAlive = "SELECT \(joined) FROM \"__fm_log\" l JOIN \(table) t ON t.\"id\" = l.\"id\" " + window
        changedDeleted = "SELECT l.\"id\", d.\"revision\", d.\"stamp\" FROM \"__fm_log\" l JOIN \"__fm_deleted\" d "
            + "ON d.\"entity\" = l.\"entity\" AND d.\"id\" = l.\"id\" " + window
        insert = "INSERT OR REPLACE INTO \(table) (\(columns.joined(separator: ", "))) VALUES ("
            + Array(repeating: "?", count: columns.count).joined(separator: ", ") + ")"
        select = "SELECT \(columns.joined(separator: ", ")) FROM \(table) WHERE \"id\" = ?"
        delete = "DELETE FROM \(table) WHERE \"id\" = ?"
        hasReferences = entity.fields.contains { $0.type.referenceTarget != nil }
    }

    var createTable: String {
        var columns = entity.columnDefinitions
        columns += ["\"__fm_stamps\" BLOB NOT NULL", "\"__fm_revision\" INTEGER NOT NULL", "\"__fm_created\" INTEGER NOT NULL", "\"__fm_fields\" BLOB"]
        return "CREATE TABLE \(table) (" + columns.joined(separator: ", ") + ")"
    }
}

/// A record as the server holds it.
struct ServerRow {
    var record: Record
    var revision: Int64
    var created: Int64
    /// The revision at which each field last changed; nil while all changed at `revision`.
    var fieldRevisions: ContiguousArray<Int64>?

    init(record: Record, revision: Int64, created: Int64, fieldRevisions: ContiguousArray<Int64>? = nil) {
        self.record = record
        self.revision = revision
        self.created = created
        self.fieldRevisions = fieldRevisions
    }

    /// The revision at which field `index` last changed.
    func revision(ofField index: Int) -> Int64 { fieldRevisions?[index] ?? revision }

    /// Moves the record to `revision`, with the fields in `changed` changed at it.
    mutating func advance(to newRevision: Int64, changed: FieldMask) {
        var fields = fieldRevisions ?? ContiguousArray(repeating: revision, count: record.values.count)
        for index in changed { fields[index] = newRevision }
        revision = newRevision
        fieldRevisions = fields.allSatisfy { $0 == newRevision } ? nil : fields
    }

    /// Field revisions as unsigned LEB128 distances back from the record's revision.
    static func encode(_ fields: ContiguousArray<Int64>, revision: Int64) -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(fields.count * 2)
        for field in fields {
            var rest = UInt64(bitPattern: revision &- field)
            while rest >= 0x80 {
                bytes.append(UInt8(truncatingIfNeeded: rest) | 0x80)
                rest >>= 7
            }
            bytes.append(UInt8(rest))
        }
        return bytes
    }

    static func decode(_ bytes: UnsafeRawBufferPointer, count: Int, revision: Int64) -> ContiguousArray<Int64>? {
        var fields = ContiguousArray<Int64>()
        fields.reserveCapacity(count)
        var position = 0
        for _ in 0..<count {
            var value: UInt64 = 0, shift: UInt64 = 0
            while true {
                guard position < bytes.count, shift < 64 else { return nil }
                let byte = bytes[position]
                position += 1
                value |= UInt64(byte & 0x7F) << shift
                if byte < 0x80 { break }
                shift += 7
            }
            fields.append(revision &- Int64(bitPattern: value))
        }
        return position == bytes.count ? fields : nil
    }
}

extension RevisionServer {
    func readRow(_ table: ServerTable, id: Int64) throws(SQLiteError) -> ServerRow? {
        let statement = try cached(&table.selectStatement, table.select)
        defer { statement.reset() }
        try statement.bind(id, at: 1)
        guard try statement.step() else { return nil }
        return try decodeRow(statement, table, fieldRevisions: true)
    }

    /// The row `statement` stands on, whose columns are ``ServerTable/columns``.
    func decodeRow(_ statement: Statement, _ table: ServerTable, fieldRevisions readFields: Bool) throws(SQLiteError) -> ServerRow {
        let id = statement.int64(0)
        var values = ContiguousArray<Value>()
        values.reserveCapacity(table.entity.fields.count)
        for (index, field) in table.entity.fields.enumerated() {
            guard let value = statement.value(Int32(index + 1), as: field.type) else {
                throw SQLiteError(code: 11, message: "column \(table.entity.name).\(field.name) of \(id) is not \(field.type.name)")
            }
            values.append(value)
        }
        let count = table.entity.fields.count
        let stamps: Result<ContiguousArray<Stamp>, RecordCodingError> = statement.withBlob(Int32(count + 1)) { bytes in
            Result { () throws(RecordCodingError) in try RecordCoding.decodeStamps(bytes, count: count) }
        }
        guard case .success(let decoded) = stamps else {
            throw SQLiteError(code: 11, message: "stamps of \(table.entity.name)#\(id) are damaged")
        }
        let revision = statement.int64(Int32(count + 2))
        var fieldRevisions: ContiguousArray<Int64>?
        if readFields, !statement.isNull(Int32(count + 4)) {
            fieldRevisions = statement.withBlob(Int32(count + 4)) { ServerRow.decode($0, count: count, revision: revision) }
            guard fieldRevisions != nil else {
                throw SQLiteError(code: 11, message: "field revisions of \(table.entity.name)#\(id) are damaged")
            }
        }
        return ServerRow(
            record: Record(entity: table.entity.name, id: id, values: values, stamps: decoded),
            revision: revision, created: statement.int64(Int32(count + 3)), fieldRevisions: fieldRevisions)
    }

    func writeRow(_ table: ServerTable, _ row: ServerRow) throws(SQLiteError) {
        let statement = try cached(&table.insertStatement, table.insert)
        defer { statement.reset() }
        try statement.bind(row.record.id, at: 1)
        for (index, value) in row.record.values.enumerated() { try statement.bindField(value, at: Int32(index + 2)) }
        var stamps: [UInt8] = []
        RecordCoding.encodeStamps(row.record.stamps, into: &stamps)
        let count = Int32(table.entity.fields.count)
        try statement.bind(stamps, at: count + 2)
        try statement.bind(row.revision, at: count + 3)
        try statement.bind(row.created, at: count + 4)
        if let fields = row.fieldRevisions {
            try statement.bind(ServerRow.encode(fields, revision: row.revision), at: count + 5)
        } else {
            try statement.bindNull(at: count + 5)
        }
        try statement.execute()
        try logChange(table.entity.name, id: row.record.id, revision: row.revision)
    }

    private func cached(_ slot: inout Statement?, _ sql: String) throws(SQLiteError) -> Statement {
        if let statement = slot { return statement }
        let statement = try database.statement(sql)
        slot = statement
        return statement
    }

    func deleteRow(_ table: ServerTable, id: Int64, tombstone: Stamp, revision: Int64) throws(SQLiteError) {
        try database.run(table.delete, [.integer(id)])
        var stamp: [UInt8] = []
        RecordCoding.encodeStamps([tombstone], into: &stamp)
        try database.run(
            "INSERT OR REPLACE INTO \"__fm_deleted\" (\"entity\", \"id\", \"revision\", \"stamp\") VALUES (?, ?, ?, ?)",
            [.text(table.entity.name), .integer(id), .integer(revision), .blob(stamp)])
        try logChange(table.entity.name, id: id, revision: revision)
    }

    /// The revision and tombstone stamp of a deleted record, or nil.
    func deletion(_ entity: String, id: Int64) throws(SQLiteError) -> (revision: Int64, tombstone: Stamp)? {
        let statement = try database.statement(
            "SELECT \"revision\", \"stamp\" FROM \"__fm_deleted\" WHERE \"entity\" = ? AND \"id\" = ?")
        defer { statement.reset() }
        try statement.bind(entity, at: 1)
        try statement.bind(id, at: 2)
        guard try statement.step() else { return nil }
        return (statement.int64(0), try Self.tombstone(statement, column: 1, entity: entity, id: id))
    }

    private func logChange(_ entity: String, id: Int64, revision: Int64) throws(SQLiteError) {
        try database.run(
            "INSERT OR REPLACE INTO \"__fm_log\" (\"entity\", \"id\", \"revision\") VALUES (?, ?, ?)",
            [.text(entity), .integer(id), .integer(revision)])
    }
}
