import FieldMerge

/// One entity row as the store keeps it: the record, its pending fields and its ancestor.
struct StoredRow {
    var record: Record
    var pending: FieldMask
    /// The revision of the acknowledged version; nil if the server never acknowledged it.
    var revision: Int64?
    /// The acknowledged version when it differs from ``record``; nil when it equals the
    /// row (then ``pending`` is empty) or when there is none (``revision`` is nil).
    var storedAncestor: Record?

    /// The acknowledged version, or nil.
    var ancestor: Record? {
        guard revision != nil else { return nil }
        return storedAncestor ?? record
    }
}

/// A deleted record waiting in `__fm_tombstones`.
struct Tombstone {
    var record: Record  // stamps of the fields, tombstone set; values unknown (null)
    var pending: FieldMask
    var revision: Int64?
    var ancestor: Record?
}

extension Store {
    // MARK: Entity rows

    func readRow(_ table: EntityTable, id: Int64) throws(StoreError) -> StoredRow? {
        try sqlite { () throws(SQLiteError) -> StoredRow? in
            let statement = try prepared(&selects, table, table.sql.select)
            defer { statement.reset() }
            try statement.bind(id, at: 1)
            guard try statement.step() else { return nil }
            return try decodeRow(statement, table, id: id)
        }
    }

    /// The row `statement` stands on, whose columns are the table's (`id`, the fields, the
    /// metadata): from the entity's table, or from its shadow of captured writes.
    func decodeRow(_ statement: Statement, _ table: EntityTable, id: Int64) throws(SQLiteError) -> StoredRow {
        let entity = table.entity
        var values = ContiguousArray<Value>()
        values.reserveCapacity(entity.fields.count)
        for (index, kind) in table.kinds.enumerated() {
            guard let value = statement.value(Int32(index + 1), as: kind) else {
                let field = entity.fields[index]
                throw SQLiteError.damaged("column \(entity.name).\(field.name) of record \(id) holds a value that is not \(field.type.name)")
            }
            values.append(value)
        }
        // No stamps yet (an empty blob): a row inserted with plain SQL that the store has not
        // taken in yet (its next transaction will stamp it); read as unstamped.
        let stamps = try decodeBlob(statement, table.stampsIndex, "stamps of \(entity.name)#\(id)") {
            (bytes) throws(RecordCodingError) in
            bytes.isEmpty ? ContiguousArray(repeating: Stamp.none, count: entity.fields.count)
                : try RecordCoding.decodeStamps(bytes, count: entity.fields.count)
        }
        let pending = FieldMask(bits: UInt64(bitPattern: statement.int64(table.pendingIndex)))
        let revision = statement.isNull(table.revisionIndex) ? nil : statement.int64(table.revisionIndex)
        var ancestor: Record?
        if !statement.isNull(table.ancestorIndex) {
            ancestor = try decodeBlob(statement, table.ancestorIndex, "ancestor of \(entity.name)#\(id)") {
                (bytes) throws(RecordCodingError) in try RecordCoding.decodeAncestor(bytes, entity: entity, id: id).record
            }
        }
        let record = Record(entity: entity.name, id: id, values: values, stamps: stamps)
        return StoredRow(record: record, pending: pending, revision: revision, storedAncestor: ancestor)
    }

    func writeRow(_ table: EntityTable, _ row: StoredRow) throws(SQLiteError) {
        let statement = try prepared(&upserts, table, table.upsert)
        defer { statement.reset() }
        try statement.bind(row.record.id, at: 1)
        for (index, value) in row.record.values.enumerated() { try statement.bindField(value, at: Int32(index + 2)) }
        scratch.removeAll(keepingCapacity: true)
        RecordCoding.encodeStamps(row.record.stamps, into: &scratch)
        try statement.bind(scratch, at: table.stampsIndex + 1)
        try statement.bind(Int64(bitPattern: row.pending.bits), at: table.pendingIndex + 1)
        if let revision = row.revision { try statement.bind(revision, at: table.revisionIndex + 1) } else {
            try statement.bindNull(at: table.revisionIndex + 1)
        }
        if let ancestor = row.storedAncestor {
            scratch.removeAll(keepingCapacity: true)
            RecordCoding.encodeAncestor(ancestor, revision: row.revision ?? 0, entity: table.entity, into: &scratch)
            try statement.bind(scratch, at: table.ancestorIndex + 1)
        } else {
            try statement.bindNull(at: table.ancestorIndex + 1)
        }
        try statement.execute()
    }

    /// A statement of `table` kept by entity name; reset after each use by its caller.
    func prepared(_ cache: inout [String: Statement], _ table: EntityTable, _ sql: String) throws(SQLiteError) -> Statement {
        if let statement = cache[table.entity.name] { return statement }
        let statement = try database.statement(sql)
        cache[table.entity.name] = statement
        return statement
    }

    func deleteRow(_ table: EntityTable, id: Int64) throws(SQLiteError) {
        try database.run(table.sql.delete, [.integer(id)])
    }

    // MARK: Tombstones

    func readTombstone(_ entity: Entity, id: Int64) throws(StoreError) -> Tombstone? {
        try sqlite { () throws(SQLiteError) -> Tombstone? in
            let statement = try database.statement(
                "SELECT \"deleted\", \"stamps\", \"pending\", \"revision\", \"ancestor\" FROM \"__fm_tombstones\" WHERE \"entity\" = ? AND \"id\" = ?")
            defer { statement.reset() }
            try statement.bind(entity.name, at: 1)
            try statement.bind(id, at: 2)
            guard try statement.step() else { return nil }
            let what = "tombstone of \(entity.name)#\(id)"
            do {
                let deleted = try decodeBlob(statement, 0, what) { (bytes) throws(RecordCodingError) in
                    try RecordCoding.decodeStamps(bytes, count: 1)
                }
                let stamps = try decodeBlob(statement, 1, what) { (bytes) throws(RecordCodingError) in
                    try RecordCoding.decodeStamps(bytes, count: entity.fields.count)
                }
                let ancestor = statement.isNull(4) ? nil : try decodeBlob(statement, 4, what) { (bytes) throws(RecordCodingError) in
                    try RecordCoding.decodeAncestor(bytes, entity: entity, id: id).record
                }
                let record = Record(
                    entity: entity.name, id: id,
                    values: ContiguousArray(repeating: .null, count: entity.fields.count), stamps: stamps,
                    tombstone: deleted[0])
                return Tombstone(
                    record: record, pending: FieldMask(bits: UInt64(bitPattern: statement.int64(2))),
                    revision: statement.isNull(3) ? nil : statement.int64(3), ancestor: ancestor)
            }
        }
    }

    func writeTombstone(_ entity: Entity, _ tombstone: Tombstone) throws(SQLiteError) {
        var deleted: [UInt8] = [], stamps: [UInt8] = []
        RecordCoding.encodeStamps([tombstone.record.tombstone ?? .none], into: &deleted)
        RecordCoding.encodeStamps(tombstone.record.stamps, into: &stamps)
        var ancestor: SQLValue = .null
        if let record = tombstone.ancestor {
            var bytes: [UInt8] = []
            RecordCoding.encodeAncestor(record, revision: tombstone.revision ?? 0, entity: entity, into: &bytes)
            ancestor = .blob(bytes)
        }
        try database.run(
            "INSERT OR REPLACE INTO \"__fm_tombstones\" (\"entity\", \"id\", \"deleted\", \"stamps\", \"pending\", \"revision\", \"ancestor\") VALUES (?, ?, ?, ?, ?, ?, ?)",
            [.text(entity.name), .integer(tombstone.record.id), .blob(deleted), .blob(stamps),
             .integer(Int64(bitPattern: tombstone.pending.bits)), tombstone.revision.map(SQLValue.integer) ?? .null, ancestor])
    }

    func deleteTombstone(_ entity: String, id: Int64) throws(SQLiteError) {
        try database.run("DELETE FROM \"__fm_tombstones\" WHERE \"entity\" = ? AND \"id\" = ?", [.text(entity), .integer(id)])
    }

    /// Decodes a metadata blob in place; a damaged one is a ``SQLiteError/damaged(_:)``.
    func decodeBlob<T>(
        _ statement: Statement, _ column: Int32, _ what: String,
        _ decode: (UnsafeRawBufferPointer) throws(RecordCodingError) -> T
    ) throws(SQLiteError) -> T {
        let result: Result<T, RecordCodingError> = statement.withBlob(column) { bytes in
            Result { () throws(RecordCodingError) -> T in try decode(bytes) }
        }
        switch result {
        case .success(let value): return value
        case .failure(let error): throw SQLiteError.damaged("\(what): \(error)")
        }
    }

    // MARK: Outbox

    func markPending(_ entity: String, id: Int64) throws(SQLiteError) {
        try database.run("INSERT OR IGNORE INTO \"__fm_outbox\" (\"entity\", \"id\") VALUES (?, ?)", [.text(entity), .integer(id)])
    }

    /// The record has nothing left to send: out of the outbox, and no longer refused.
    func clearPending(_ entity: String, id: Int64) throws(SQLiteError) {
        try database.run("DELETE FROM \"__fm_outbox\" WHERE \"entity\" = ? AND \"id\" = ?", [.text(entity), .integer(id)])
        try unpark(entity, id: id)
    }
}

extension SQLiteError {
    /// Store metadata that cannot be read back (damaged by hand or by another program).
    static func damaged(_ message: String) -> SQLiteError {
        SQLiteError(code: 11, message: "damaged store metadata: \(message)", sql: nil)  // SQLITE_CORRUPT
    }
}
