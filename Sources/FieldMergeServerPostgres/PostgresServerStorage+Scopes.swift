import FieldMerge
import FieldMergeProtocol
import FieldMergeServer
import PostgresNIO

/// Scopes on PostgreSQL, as on SQLite: each entity table's `__fm_root` with an index by root
/// and revision (partial: unscoped tables keep it empty), the root in `__fm_deleted`,
/// `__fm_departed` (which records left which root when) and `__fm_scopes` (the signature
/// of the rules the roots were computed for). Lists of roots are one `bigint[]` binding
/// (`= ANY($n)`), never spliced.
extension PostgresServerStorage: ScopedServerStorage {
    /// Adds what the scopes need besides the entity tables to a data set made before them
    /// (inside ``open(schema:)``'s transaction, under its advisory lock, before a migration
    /// renames entities in them). The catalog is read first: an `ALTER TABLE` or
    /// `CREATE INDEX` waits for every other server's transaction on its table even when
    /// `IF NOT EXISTS` then finds nothing to do.
    nonisolated(nonsending) func prepareScopeTables() async throws {
        let (relations, columns) = try await catalog()
        if !columns.contains(Self.key("__fm_deleted", "root")) {
            try await run("ALTER TABLE \(named("__fm_deleted")) ADD COLUMN IF NOT EXISTS \"root\" BIGINT")
        }
        if !relations.contains("__fm_deleted_root") {
            try await run(
                "CREATE INDEX IF NOT EXISTS \"__fm_deleted_root\" ON \(named("__fm_deleted")) (\"entity\", \"root\", \"revision\") "
                    + "WHERE \"root\" IS NOT NULL")
        }
        if !relations.contains("__fm_departed") {
            try await run(
                "CREATE TABLE IF NOT EXISTS \(named("__fm_departed")) (\"entity\" TEXT NOT NULL, \"root\" BIGINT NOT NULL, "
                    + "\"id\" BIGINT NOT NULL, \"revision\" BIGINT NOT NULL, PRIMARY KEY (\"entity\", \"root\", \"id\"))")
        }
        if !relations.contains("__fm_departed_revision") {
            try await run(
                "CREATE INDEX IF NOT EXISTS \"__fm_departed_revision\" ON \(named("__fm_departed")) (\"entity\", \"root\", \"revision\")")
        }
        if !relations.contains("__fm_scopes") {
            try await run("CREATE TABLE IF NOT EXISTS \(named("__fm_scopes")) (\"signature\" TEXT NOT NULL)")
        }
    }

    /// Gives every entity table made before scopes its `__fm_root` column, and every table
    /// without one an index whose first column is `__fm_root` (after migrations: tables added
    /// or renamed keep or get theirs). The index gets a name PostgreSQL chooses, unique in
    /// the schema whatever the entity's name and position.
    nonisolated(nonsending) func prepareEntityRoots() async throws {
        let (_, columns) = try await catalog()
        let indexed = try await tablesIndexed(by: "__fm_root")
        for table in tables {
            if !columns.contains(Self.key(table.entity.name, "__fm_root")) {
                try await run("ALTER TABLE \(table.table) ADD COLUMN IF NOT EXISTS \"__fm_root\" BIGINT")
            }
            if !indexed.contains(table.entity.name) {
                try await run("CREATE INDEX ON \(table.table) (\"__fm_root\", \"__fm_revision\") WHERE \"__fm_root\" IS NOT NULL")
            }
        }
    }

    /// The tables of the PostgreSQL schema with an index whose first column is `column`.
    private nonisolated(nonsending) func tablesIndexed(by column: String) async throws -> Set<String> {
        var indexed: Set<String> = []
        for row in try await run(
            "SELECT c.\"relname\"::TEXT FROM pg_index i JOIN pg_class c ON c.\"oid\" = i.\"indrelid\" "
                + "JOIN pg_namespace n ON n.\"oid\" = c.\"relnamespace\" "
                + "JOIN pg_attribute a ON a.\"attrelid\" = i.\"indrelid\" AND a.\"attnum\" = i.\"indkey\"[0] "
                + "WHERE n.\"nspname\" = $1 AND a.\"attname\" = $2", Self.binds(schemaName, column))
        {
            indexed.insert(try row.decode(String.self))
        }
        return indexed
    }

    /// The names of the relations (tables, indexes) in the PostgreSQL schema, and its
    /// tables' columns named `root` or `__fm_root` (``key(_:_:)``).
    nonisolated(nonsending) func catalog() async throws -> (relations: Set<String>, columns: Set<String>) {
        var relations: Set<String> = [], columns: Set<String> = []
        for row in try await run(
            "SELECT c.\"relname\"::TEXT FROM pg_class c JOIN pg_namespace n ON n.\"oid\" = c.\"relnamespace\" WHERE n.\"nspname\" = $1",
            Self.binds(schemaName))
        {
            relations.insert(try row.decode(String.self))
        }
        for row in try await run(
            "SELECT c.\"relname\"::TEXT, a.\"attname\"::TEXT FROM pg_attribute a JOIN pg_class c ON c.\"oid\" = a.\"attrelid\" "
                + "JOIN pg_namespace n ON n.\"oid\" = c.\"relnamespace\" "
                + "WHERE n.\"nspname\" = $1 AND a.\"attname\" IN ('root', '__fm_root') AND a.\"attnum\" > 0 AND NOT a.\"attisdropped\"",
            Self.binds(schemaName))
        {
            let (table, column) = try row.decode((String, String).self)
            columns.insert(Self.key(table, column))
        }
        return (relations, columns)
    }

    private static func key(_ table: String, _ column: String) -> String { table + "\u{0}" + column }

    // MARK: The signature of the rules

    /// Asked first when a server with scopes starts: makes every table's changes findable by
    /// revision whatever their root (only servers with scopes pay for these indexes; a
    /// scoped catch-up reads unscoped entities, and every root, that way), then answers.
    public nonisolated(nonsending) func scopeSignature() async throws -> String? {
        let indexed = try await tablesIndexed(by: "__fm_revision")
        for table in tables where !indexed.contains(table.entity.name) {
            try await run("CREATE INDEX ON \(table.table) (\"__fm_revision\")")
        }
        if try await !catalog().relations.contains("__fm_deleted_revision") {
            try await run("CREATE INDEX IF NOT EXISTS \"__fm_deleted_revision\" ON \(named("__fm_deleted")) (\"entity\", \"revision\")")
        }
        return try await scalar("SELECT \"signature\" FROM \(named("__fm_scopes")) LIMIT 1", as: String.self)
    }

    public nonisolated(nonsending) func saveScopeSignature(_ signature: String) async throws {
        try await run("DELETE FROM \(named("__fm_scopes"))")
        try await run("INSERT INTO \(named("__fm_scopes")) (\"signature\") VALUES ($1)", Self.binds(try Self.storable(signature)))
    }

    // MARK: Roots

    /// Each `UPDATE` touches only the rows whose root changes: PostgreSQL writes a new version
    /// of every row an `UPDATE` names (and an entry in each of its indexes), even when the
    /// value stays the same.
    public nonisolated(nonsending) func assignRoots(_ entity: ServerEntity, parent: (entity: ServerEntity, field: Int)?, clear: Bool) async throws {
        let table = table(entity).table
        if clear {
            try await run("UPDATE \(table) SET \"__fm_root\" = NULL WHERE \"__fm_root\" IS NOT NULL")
        } else if let parent {
            let column = self.table(entity).sql.fieldColumn(parent.field)
            try await run(
                "UPDATE \(table) t SET \"__fm_root\" = s.\"root\" FROM (SELECT c.\"id\", p.\"__fm_root\" AS \"root\" FROM \(table) c "
                    + "LEFT JOIN \(self.table(parent.entity).table) p ON p.\"id\" = c.\(column)) s "
                    + "WHERE t.\"id\" = s.\"id\" AND t.\"__fm_root\" IS DISTINCT FROM s.\"root\"")
        } else {
            try await run("UPDATE \(table) SET \"__fm_root\" = \"id\" WHERE \"__fm_root\" IS DISTINCT FROM \"id\"")
        }
        // Tombstones keep no root across a change of scopes: devices are told again what
        // they hold by the records that are alive.
        try await run(
            "UPDATE \(named("__fm_deleted")) SET \"root\" = NULL WHERE \"entity\" = $1 AND \"root\" IS NOT NULL", Self.binds(entity.name))
    }

    public nonisolated(nonsending) func select(
        _ select: Int?, of entity: ServerEntity, where conditions: [(field: Int?, values: [Value])]
    ) async throws -> [Int64] {
        let table = table(entity)
        func column(_ field: Int?) -> String { field.map { table.sql.fieldColumn($0) } ?? "\"id\"" }
        var sql = "SELECT DISTINCT \(column(select)) FROM \(table.table) WHERE \(column(select)) IS NOT NULL"
        var binds = PostgresBindings(capacity: conditions.count)
        for (number, condition) in conditions.enumerated() {
            guard Self.bindList(condition.values, as: condition.field.map { entity.entity.fields[$0].type } ?? .integer, into: &binds) else {
                return []
            }
            sql += " AND \(column(condition.field)) = ANY($\(number + 1))"
        }
        return try await run(sql, binds).map { try $0.decode(Int64.self) }
    }

    /// Binds `values` as one array of the column type of `type`, leaving out values that
    /// column cannot hold (they equal none of its values); false when none is left (the
    /// condition matches nothing).
    private static func bindList(_ values: [Value], as type: FieldType, into binds: inout PostgresBindings) -> Bool {
        switch type {
        case .integer, .reference, .date:
            let list = values.compactMap { value -> Int64? in
                switch value {
                case .integer(let v), .date(let v): v
                default: nil
                }
            }
            binds.append(list)
            return !list.isEmpty
        case .text:
            let list = values.compactMap { value -> String? in
                if case .text(let v) = value, !v.utf8.contains(0) { return v }
                return nil
            }
            binds.append(list)
            return !list.isEmpty
        case .bool:
            let list = values.compactMap { value -> Bool? in if case .bool(let v) = value { v } else { nil } }
            binds.append(list)
            return !list.isEmpty
        case .real, .textSet, .blob, .attachment:
            // Scope rules compare integers, references, text and bools only.
            return false
        }
    }

    public nonisolated(nonsending) func changes(
        _ entity: ServerEntity, roots: RootFilter, after: Int64, through: Int64
    ) async throws -> (alive: [ServerRow], deleted: [Deletion]) {
        guard !roots.isEmpty else { return ([], []) }
        let table = table(entity)
        var binds = PostgresBindings()
        let filter = Self.rootFilter(roots, column: "\"__fm_root\"", into: &binds)
        binds.append(after)
        binds.append(through)
        let window = "\"__fm_revision\" > $\(binds.count - 1) AND \"__fm_revision\" <= $\(binds.count)"
        let alive = try await run(
            "SELECT \(table.sql.columnList) FROM \(table.table) WHERE \(filter) AND \(window) "
                + "ORDER BY \"__fm_revision\", \"id\"", binds
        ).map { row throws(ServerError) in try Self.decodeRow(row, table, fieldRevisions: false) }
        var deletedBinds = Self.binds(entity.name)
        let deletedFilter = Self.rootFilter(roots, column: "\"root\"", into: &deletedBinds)
        deletedBinds.append(after)
        deletedBinds.append(through)
        let deleted = try await run(
            "SELECT \"id\", \"revision\", \"stamp\", \"root\" FROM \(named("__fm_deleted")) WHERE \"entity\" = $1 AND \(deletedFilter) "
                + "AND \"revision\" > $\(deletedBinds.count - 1) AND \"revision\" <= $\(deletedBinds.count) ORDER BY \"revision\", \"id\"",
            deletedBinds
        ).map { row in try Self.decodeDeletion(row, entity: entity) }
        return (alive, deleted)
    }

    public nonisolated(nonsending) func records(_ entity: ServerEntity, roots: RootFilter, through: Int64) async throws -> [ServerRow] {
        guard !roots.isEmpty else { return [] }
        let table = table(entity)
        var binds = PostgresBindings()
        let filter = Self.rootFilter(roots, column: "\"__fm_root\"", into: &binds)
        binds.append(through)
        return try await run(
            "SELECT \(table.sql.columnList) FROM \(table.table) WHERE \(filter) AND \"__fm_revision\" <= $\(binds.count) "
                + "ORDER BY \"id\"", binds
        ).map { row throws(ServerError) in try Self.decodeRow(row, table, fieldRevisions: false) }
    }

    public nonisolated(nonsending) func rootSizes(_ entity: ServerEntity, roots: [Int64], through: Int64) async throws -> [Int64: Int] {
        guard !roots.isEmpty else { return [:] }
        var binds = PostgresBindings()
        let filter = Self.rootFilter(.only(roots), column: "\"__fm_root\"", into: &binds)
        binds.append(through)
        var sizes: [Int64: Int] = [:]
        for row in try await run(
            "SELECT \"__fm_root\", count(*) FROM \(table(entity).table) WHERE \(filter) AND \"__fm_revision\" <= $\(binds.count) "
                + "GROUP BY \"__fm_root\"", binds)
        {
            let (root, count) = try row.decode((Int64, Int64).self)
            sizes[root] = Int(count)
        }
        return sizes
    }

    public nonisolated(nonsending) func ids(_ entity: ServerEntity, roots: RootFilter) async throws -> [Int64] {
        guard !roots.isEmpty else { return [] }
        var binds = PostgresBindings()
        let filter = Self.rootFilter(roots, column: "\"__fm_root\"", into: &binds)
        return try await run("SELECT \"id\" FROM \(table(entity).table) WHERE \(filter) ORDER BY \"id\"", binds).map {
            try $0.decode(Int64.self)
        }
    }

    public nonisolated(nonsending) func revisions(_ entity: ServerEntity, roots: RootFilter, after: Int64, limit: Int) async throws -> [Int64] {
        guard !roots.isEmpty else { return [] }
        var binds = PostgresBindings()
        let filter = Self.rootFilter(roots, column: "\"__fm_root\"", into: &binds)
        binds.append(after)
        let alive = "SELECT \"__fm_revision\" AS r FROM \(table(entity).table) WHERE \(filter) AND \"__fm_revision\" > $\(binds.count)"
        binds.append(entity.name)
        var deleted = "SELECT \"revision\" FROM \(named("__fm_deleted")) WHERE \"entity\" = $\(binds.count) AND "
        deleted += Self.rootFilter(roots, column: "\"root\"", into: &binds)
        binds.append(after)
        deleted += " AND \"revision\" > $\(binds.count)"
        binds.append(Int64(limit))
        return try await run("SELECT r FROM (\(alive) UNION ALL \(deleted)) x ORDER BY r LIMIT $\(binds.count)", binds).map {
            try $0.decode(Int64.self)
        }
    }

    // MARK: Departures

    public nonisolated(nonsending) func depart(_ entity: ServerEntity, id: Int64, from root: Int64, revision: Int64) async throws {
        try await run(
            "INSERT INTO \(named("__fm_departed")) (\"entity\", \"root\", \"id\", \"revision\") VALUES ($1, $2, $3, $4) "
                + "ON CONFLICT (\"entity\", \"root\", \"id\") DO UPDATE SET \"revision\" = EXCLUDED.\"revision\"",
            Self.binds(entity.name, root, id, revision))
    }

    public nonisolated(nonsending) func departures(_ entity: ServerEntity, roots: RootFilter, after: Int64, through: Int64) async throws -> [Int64] {
        guard !roots.isEmpty else { return [] }
        var binds = Self.binds(entity.name)
        let filter = Self.rootFilter(roots, column: "\"root\"", into: &binds)
        binds.append(after)
        binds.append(through)
        return try await run(
            "SELECT DISTINCT \"id\" FROM \(named("__fm_departed")) WHERE \"entity\" = $1 AND \(filter) "
                + "AND \"revision\" > $\(binds.count - 1) AND \"revision\" <= $\(binds.count) ORDER BY \"id\"",
            binds
        ).map { try $0.decode(Int64.self) }
    }

    /// The condition on `column` that `roots` means; its list of roots, if any, goes into
    /// `binds` as one `bigint[]` parameter (the next number).
    static func rootFilter(_ roots: RootFilter, column: String, into binds: inout PostgresBindings) -> String {
        switch roots {
        case .every:
            return "TRUE"
        case .only(let ids):
            binds.append(ids)
            // IS NOT NULL: the partial index's condition, spelled out for the planner.
            return "(\(column) IS NOT NULL AND \(column) = ANY($\(binds.count)))"
        case .except(let ids):
            guard !ids.isEmpty else { return "TRUE" }
            binds.append(ids)
            return "(\(column) IS NULL OR \(column) <> ALL($\(binds.count)))"
        }
    }
}
