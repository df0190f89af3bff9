import FieldMerge

extension Store {
    /// The living records `query` selects, in its order: for example
    /// `try store.fetchAll(Note.all.filter(\.severity >= 3).order(\.title).limit(20, offset: 40))`.
    ///
    /// - Throws: ``StoreError/Code/unknownField`` for a column the table does not map,
    ///   ``StoreError/Code/invalidArgument`` for a value that does not fit its column, an
    ///   ordering comparison with nil or a negative limit or offset,
    ///   ``StoreError/Code/invalidRecord`` for a stored value the property cannot take.
    public func fetchAll<R: StoredRecord>(_ query: RecordQuery<R>) throws(StoreError) -> [R] {
        let table = try table(R.table.entity.name)  // an entity the schema does not have fails here, by name
        let sql = try QuerySQL(query, table)
        let rows = try sqlite { () throws(SQLiteError) -> [StoredRow] in
            let statement = try database.statement(table.selectRows + sql.clauses(ordered: true))
            try sql.bind(statement)
            var rows: [StoredRow] = []
            while try statement.step() { rows.append(try decodeRow(statement, table, id: statement.int64(0))) }
            return rows
        }
        var records: [R] = []
        records.reserveCapacity(rows.count)
        for row in rows { records.append(try R.table.row(from: row.record)) }
        return records
    }

    /// The first living record `query` selects in its order, or nil.
    ///
    /// - Throws: What `fetchAll(_:)` of a query throws.
    public func fetchOne<R: StoredRecord>(_ query: RecordQuery<R>) throws(StoreError) -> R? {
        var first = query
        first.limit = min(query.limit ?? 1, 1)
        return try fetchAll(first).first
    }

    /// How many living records `query` selects (within its limit and offset, if any).
    ///
    /// - Throws: What `fetchAll(_:)` of a query throws.
    public func fetchCount<R: StoredRecord>(_ query: RecordQuery<R>) throws(StoreError) -> Int {
        let table = try table(R.table.entity.name)
        let sql = try QuerySQL(query, table)
        return try sqlite { () throws(SQLiteError) -> Int in
            let statement = try database.statement(
                "SELECT count(*) FROM (SELECT 1 FROM \(table.table)\(sql.clauses(ordered: query.limit != nil || query.offset != 0)))")
            try sql.bind(statement)
            _ = try statement.step()
            return Int(statement.int64(0))
        }
    }
}

/// A ``RecordQuery`` as SQL: its `WHERE`, `ORDER BY` and `LIMIT` clauses, with the values
/// to bind in order. Identifiers are quoted like the store's other SQL; values are `?`.
struct QuerySQL {
    private(set) var condition = ""
    private(set) var order = ""
    private(set) var bindings: [Value] = []
    private let limit: Int?
    private let offset: Int

    init<R: StoredRecord>(_ query: RecordQuery<R>, _ table: EntityTable) throws(StoreError) {
        limit = query.limit
        offset = query.offset
        let entity = table.entity
        guard (query.limit ?? 0) >= 0, query.offset >= 0 else {
            throw StoreError(.invalidArgument, "a query's limit and offset cannot be negative", entity: entity.name)
        }
        var resolver = QueryColumns(R.self, entity)
        var conditions: [String] = []
        for filter in query.filters { conditions.append(try resolver.sql(filter.node, &bindings)) }
        if !conditions.isEmpty { condition = " WHERE " + conditions.joined(separator: " AND ") }
        var keys: [String] = []
        for (column, direction) in query.ordering {
            keys.append("\(try resolver.resolve(column).sql)\(direction == .descending ? " DESC" : "")")
        }
        keys.append("\"id\" < 0, abs(\"id\")")  // the table's own order breaks ties
        order = " ORDER BY " + keys.joined(separator: ", ")
    }

    /// The clauses after `FROM`; the order only when `ordered` (a count needs none without a limit).
    func clauses(ordered: Bool) -> String {
        var sql = condition
        if ordered { sql += order }
        if limit != nil || offset != 0 { sql += " LIMIT ? OFFSET ?" }
        return sql
    }

    func bind(_ statement: Statement) throws(SQLiteError) {
        for (index, value) in bindings.enumerated() { try statement.bindField(value, at: Int32(index + 1)) }
        if limit != nil || offset != 0 {
            try statement.bind(Int64(limit ?? -1), at: Int32(bindings.count + 1))  // -1: no limit
            try statement.bind(Int64(offset), at: Int32(bindings.count + 2))
        }
    }
}

/// Finds the columns a query names in the entity, and turns its values into bound ``Value``s.
private struct QueryColumns<R: StoredRecord> {
    let entity: Entity

    init(_ type: R.Type, _ entity: Entity) { self.entity = entity }

    /// A column as SQL, with how its values convert: `id` is not one of the table's columns.
    struct Resolved {
        var sql: String
        var name: String
        var type: FieldType
        var column: Column<R>?
    }

    func resolve(_ column: QueryColumn) throws(StoreError) -> Resolved {
        let index: Int?
        switch column {
        case .path(let path):
            index = R.table.columns.firstIndex { $0.keyPath == path }
            if index == nil, Self.isID(path) { return Resolved(sql: "\"id\"", name: "id", type: .integer, column: nil) }
            guard let index, index < entity.fields.count else {
                throw StoreError(.unknownField, "the key path \(path) names no column of \(R.self)'s table", entity: entity.name)
            }
        case .name(let name):
            if name == "id" { return Resolved(sql: "\"id\"", name: "id", type: .integer, column: nil) }
            index = entity.fields.firstIndex { $0.name == name }
            guard index != nil else {
                throw StoreError(.unknownField, "entity '\(entity.name)' has no field '\(name)'", entity: entity.name)
            }
        }
        let field = entity.fields[index!]
        return Resolved(sql: Database.quote(field.name), name: field.name, type: field.type,
                        column: index! < R.table.columns.count ? R.table.columns[index!] : nil)
    }

    /// Whether `path` is the record's `id` (`\Note.id` is not `\R.id`, the protocol's
    /// requirement, as a key path: it is told by what it reads).
    static func isID(_ path: AnyKeyPath) -> Bool {
        var row = R()
        for probe: Int64 in [0x5EED_1D, -0x5EED_1D] {
            row.id = probe
            guard row[keyPath: path] as? Int64 == probe else { return false }
        }
        return true
    }

    func value(_ operand: QueryFilter<R>.Operand, for column: Resolved) throws(StoreError) -> Value {
        let converted: Value?
        switch operand {
        case .typed(let value):
            if let column = column.column { converted = column.encode(value) } else {
                converted = (value as? Int64).map(Value.integer) ?? ((value as? Int64?) ?? nil).map(Value.integer)
            }
        case .value(let value):
            converted = value.fits(column.type) ? .some(value) : .none  // (a bare nil would be Value.null)
        }
        guard let converted else {
            throw StoreError(.invalidArgument, "a query value does not fit field '\(column.name)' (\(column.type.name))", entity: entity.name)
        }
        return converted
    }

    mutating func sql(_ node: QueryFilter<R>.Node, _ bindings: inout [Value]) throws(StoreError) -> String {
        switch node {
        case .compare(let column, let comparison, let operand):
            let resolved = try resolve(column)
            let value = try value(operand, for: resolved)
            if value == .null {
                switch comparison {
                case .equal: return "\(resolved.sql) IS NULL"
                case .notEqual: return "\(resolved.sql) IS NOT NULL"
                default: throw StoreError(.invalidArgument, "'\(resolved.name) \(comparison.rawValue) nil' compares with null: use == nil or != nil", entity: entity.name)
                }
            }
            bindings.append(value)
            return "\(resolved.sql) \(comparison.rawValue) ?"
        case .isNull(let column):
            return "\(try resolve(column).sql) IS NULL"
        case .isIn(let column, let operands):
            let resolved = try resolve(column)
            guard !operands.isEmpty else { return "0" }
            for operand in operands { bindings.append(try value(operand, for: resolved)) }
            return "\(resolved.sql) IN (\(Array(repeating: "?", count: operands.count).joined(separator: ", ")))"
        case .and(let lhs, let rhs):
            return "(\(try sql(lhs, &bindings)) AND \(try sql(rhs, &bindings)))"
        case .or(let lhs, let rhs):
            return "(\(try sql(lhs, &bindings)) OR \(try sql(rhs, &bindings)))"
        case .not(let inner):
            return "NOT (\(try sql(inner, &bindings)))"
        }
    }
}
