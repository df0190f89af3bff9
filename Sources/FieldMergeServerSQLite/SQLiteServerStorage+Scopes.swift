import FieldMerge
import FieldMergeProtocol
import FieldMergeSQLiteDriver
import FieldMergeServer

/// Scopes on SQLite: each table's `__fm_root` with an index by root and revision (partial:
/// unscoped tables keep it empty), the root in `__fm_deleted`, and `__fm_departed`, which
/// records left which root when.
extension SQLiteServerStorage: ScopedServerStorage {
    /// Adds what files made before scopes lack; cheap when they have it.
    func prepareRoots(_ schema: Schema) throws(SQLiteError) {
        for entity in schema.entities where try !hasColumn(entity.name, "__fm_root") {
            try database.execute("ALTER TABLE \(Database.quote(entity.name)) ADD COLUMN \"__fm_root\" INTEGER")
        }
        if try !hasColumn("__fm_deleted", "root") {
            try database.execute("ALTER TABLE \"__fm_deleted\" ADD COLUMN \"root\" INTEGER")
        }
        for entity in schema.entities {
            try database.execute(
                "CREATE INDEX IF NOT EXISTS \(Database.quote(entity.name + "__fm_root")) ON \(Database.quote(entity.name)) "
                    + "(\"__fm_root\", \"__fm_revision\") WHERE \"__fm_root\" IS NOT NULL")
        }
        try database.execute("""
            CREATE INDEX IF NOT EXISTS "__fm_deleted_root" ON "__fm_deleted" ("entity", "root", "revision") WHERE "root" IS NOT NULL;
            CREATE TABLE IF NOT EXISTS "__fm_departed" ("entity" TEXT NOT NULL, "root" INTEGER NOT NULL, "id" INTEGER NOT NULL,
              "revision" INTEGER NOT NULL, PRIMARY KEY ("entity", "root", "id")) WITHOUT ROWID;
            CREATE INDEX IF NOT EXISTS "__fm_departed_revision" ON "__fm_departed" ("entity", "root", "revision")
            """)
    }

    public nonisolated(nonsending) func scopeSignature() async throws -> String? {
        // Only servers with scopes pay for these: the signature, and changes by revision whatever
        // their root (scoped catch-up reads unscoped entities, and every root, that way).
        try database.execute("""
            CREATE TABLE IF NOT EXISTS "__fm_scopes" ("signature" TEXT NOT NULL);
            CREATE INDEX IF NOT EXISTS "__fm_deleted_revision" ON "__fm_deleted" ("entity", "revision")
            """)
        for table in tables {
            try database.execute(
                "CREATE INDEX IF NOT EXISTS \(Database.quote(table.entity.name + "__fm_revision")) ON \(table.table) (\"__fm_revision\")")
        }
        if case .text(let signature)? = try database.scalar("SELECT \"signature\" FROM \"__fm_scopes\"") { return signature }
        return nil
    }

    public nonisolated(nonsending) func saveScopeSignature(_ signature: String) async throws {
        try database.execute("DELETE FROM \"__fm_scopes\"")
        try database.run("INSERT INTO \"__fm_scopes\" VALUES (?)", [.text(signature)])
    }

    public nonisolated(nonsending) func assignRoots(_ entity: ServerEntity, parent: (entity: ServerEntity, field: Int)?, clear: Bool) async throws {
        let table = table(entity).table
        if clear {
            try database.execute("UPDATE \(table) SET \"__fm_root\" = NULL WHERE \"__fm_root\" IS NOT NULL")
        } else if let parent {
            let column = Database.quote(entity.entity.fields[parent.field].name)
            // Only rows whose root changes are written.
            let parentRoot = "(SELECT p.\"__fm_root\" FROM \(self.table(parent.entity).table) p WHERE p.\"id\" = \(table).\(column))"
            try database.execute("UPDATE \(table) SET \"__fm_root\" = \(parentRoot) WHERE \"__fm_root\" IS NOT \(parentRoot)")
        } else {
            try database.execute("UPDATE \(table) SET \"__fm_root\" = \"id\" WHERE \"__fm_root\" IS NOT \"id\"")
        }
        // Tombstones keep no root across a change of scopes: devices are told again what
        // they hold by the records that are alive.
        try database.run("UPDATE \"__fm_deleted\" SET \"root\" = NULL WHERE \"entity\" = ? AND \"root\" IS NOT NULL", [.text(entity.name)])
    }

    public nonisolated(nonsending) func select(
        _ select: Int?, of entity: ServerEntity, where conditions: [(field: Int?, values: [Value])]
    ) async throws -> [Int64] {
        func column(_ field: Int?) -> String { field.map { Database.quote(entity.entity.fields[$0].name) } ?? "\"id\"" }
        var sql = "SELECT DISTINCT \(column(select)) FROM \(table(entity).table) WHERE \(column(select)) IS NOT NULL"
        var bindings: [(Int?, Value)] = []
        for condition in conditions {
            guard !condition.values.isEmpty else { return [] }
            sql += " AND \(column(condition.field)) IN (" + Array(repeating: "?", count: condition.values.count).joined(separator: ", ") + ")"
            bindings += condition.values.map { (condition.field, $0) }
        }
        let statement = try database.statement(sql)
        defer { statement.reset() }
        for (position, binding) in bindings.enumerated() {
            try statement.bindField(binding.1, at: Int32(position + 1))
        }
        var ids: [Int64] = []
        while try statement.step() { ids.append(statement.int64(0)) }
        return ids
    }

    public nonisolated(nonsending) func changes(
        _ entity: ServerEntity, roots: RootFilter, after: Int64, through: Int64
    ) async throws -> (alive: [ServerRow], deleted: [Deletion]) {
        guard !roots.isEmpty else { return ([], []) }
        let table = table(entity)
        let (filter, bindings) = Self.rootFilter(roots, column: "\"__fm_root\"")
        let rows = try database.statement(
            "SELECT \(table.sql.columnList) FROM \(table.table) WHERE \(filter) AND \"__fm_revision\" > ? AND \"__fm_revision\" <= ? "
                + "ORDER BY \"__fm_revision\", \"id\"")
        defer { rows.reset() }
        try rows.bind(bindings + [.integer(after), .integer(through)])
        var alive: [ServerRow] = []
        while try rows.step() { alive.append(try decodeRow(rows, table, fieldRevisions: false)) }
        let (deletedFilter, deletedBindings) = Self.rootFilter(roots, column: "\"root\"")
        let tombstones = try database.statement(
            "SELECT \"id\", \"revision\", \"stamp\", \"root\" FROM \"__fm_deleted\" WHERE \"entity\" = ? AND \(deletedFilter) "
                + "AND \"revision\" > ? AND \"revision\" <= ? ORDER BY \"revision\", \"id\"")
        defer { tombstones.reset() }
        try tombstones.bind([.text(entity.name)] + deletedBindings + [.integer(after), .integer(through)])
        var deleted: [Deletion] = []
        while try tombstones.step() {
            let id = tombstones.int64(0)
            deleted.append(Deletion(
                id: id, revision: tombstones.int64(1), tombstone: try Self.tombstone(tombstones, column: 2, entity: entity.name, id: id),
                root: tombstones.isNull(3) ? nil : tombstones.int64(3)))
        }
        return (alive, deleted)
    }

    public nonisolated(nonsending) func records(_ entity: ServerEntity, roots: RootFilter, through: Int64) async throws -> [ServerRow] {
        guard !roots.isEmpty else { return [] }
        let table = table(entity)
        let (filter, bindings) = Self.rootFilter(roots, column: "\"__fm_root\"")
        let rows = try database.statement(
            "SELECT \(table.sql.columnList) FROM \(table.table) WHERE \(filter) AND \"__fm_revision\" <= ? ORDER BY \"id\"")
        defer { rows.reset() }
        try rows.bind(bindings + [.integer(through)])
        var result: [ServerRow] = []
        while try rows.step() { result.append(try decodeRow(rows, table, fieldRevisions: false)) }
        return result
    }

    public nonisolated(nonsending) func rootSizes(_ entity: ServerEntity, roots: [Int64], through: Int64) async throws -> [Int64: Int] {
        guard !roots.isEmpty else { return [:] }
        let (filter, bindings) = Self.rootFilter(.only(roots), column: "\"__fm_root\"")
        var sizes: [Int64: Int] = [:]
        for row in try database.rows(
            "SELECT \"__fm_root\", count(*) FROM \(table(entity).table) WHERE \(filter) AND \"__fm_revision\" <= ? GROUP BY \"__fm_root\"",
            bindings + [.integer(through)])
        {
            if case .integer(let root)? = row.first, case .integer(let count)? = row.last { sizes[root] = Int(count) }
        }
        return sizes
    }

    public nonisolated(nonsending) func ids(_ entity: ServerEntity, roots: RootFilter) async throws -> [Int64] {
        guard !roots.isEmpty else { return [] }
        let (filter, bindings) = Self.rootFilter(roots, column: "\"__fm_root\"")
        return try database.rows("SELECT \"id\" FROM \(table(entity).table) WHERE \(filter) ORDER BY \"id\"", bindings).compactMap {
            if case .integer(let id)? = $0.first { return id }
            return nil
        }
    }

    public nonisolated(nonsending) func revisions(_ entity: ServerEntity, roots: RootFilter, after: Int64, limit: Int) async throws -> [Int64] {
        guard !roots.isEmpty else { return [] }
        let (filter, bindings) = Self.rootFilter(roots, column: "\"__fm_root\"")
        let (deletedFilter, deletedBindings) = Self.rootFilter(roots, column: "\"root\"")
        return try database.rows(
            "SELECT r FROM (SELECT \"__fm_revision\" AS r FROM \(table(entity).table) WHERE \(filter) AND \"__fm_revision\" > ? "
                + "UNION ALL SELECT \"revision\" FROM \"__fm_deleted\" WHERE \"entity\" = ? AND \(deletedFilter) AND \"revision\" > ?) "
                + "ORDER BY r LIMIT ?",
            bindings + [.integer(after), .text(entity.name)] + deletedBindings + [.integer(after), .integer(Int64(limit))]
        ).compactMap {
            if case .integer(let revision)? = $0.first { return revision }
            return nil
        }
    }

    public nonisolated(nonsending) func depart(_ entity: ServerEntity, id: Int64, from root: Int64, revision: Int64) async throws {
        try database.run(
            "INSERT OR REPLACE INTO \"__fm_departed\" (\"entity\", \"root\", \"id\", \"revision\") VALUES (?, ?, ?, ?)",
            [.text(entity.name), .integer(root), .integer(id), .integer(revision)])
    }

    public nonisolated(nonsending) func departures(_ entity: ServerEntity, roots: RootFilter, after: Int64, through: Int64) async throws -> [Int64] {
        guard !roots.isEmpty else { return [] }
        let (filter, bindings) = Self.rootFilter(roots, column: "\"root\"")
        return try database.rows(
            "SELECT DISTINCT \"id\" FROM \"__fm_departed\" WHERE \"entity\" = ? AND \(filter) AND \"revision\" > ? AND \"revision\" <= ? ORDER BY \"id\"",
            [.text(entity.name)] + bindings + [.integer(after), .integer(through)]
        ).compactMap {
            if case .integer(let id)? = $0.first { return id }
            return nil
        }
    }

    /// The condition on `column` that `roots` means, with its bindings. Long lists go
    /// through `json_each` (one binding) rather than thousands of parameters.
    static func rootFilter(_ roots: RootFilter, column: String) -> (String, [SQLValue]) {
        func list(_ ids: [Int64]) -> (String, [SQLValue]) {
            if ids.count <= 64 { return ("(" + Array(repeating: "?", count: ids.count).joined(separator: ", ") + ")", ids.map { .integer($0) }) }
            return ("(SELECT value FROM json_each(?))", [.text("[" + ids.map(String.init).joined(separator: ",") + "]")])
        }
        switch roots {
        case .every: return ("1", [])
        case .only(let ids):
            let (set, bindings) = list(ids)
            return ("\(column) IN \(set)", bindings)
        case .except(let ids):
            if ids.isEmpty { return ("1", []) }
            let (set, bindings) = list(ids)
            return ("(\(column) IS NULL OR \(column) NOT IN \(set))", bindings)
        }
    }
}
