import FieldMerge
import FieldMergeProtocol
@testable import FieldMergeServer
import FieldMergeServerPostgres
import FieldMergeServerSQLite
import FieldMergeTestSupport
import Testing

/// Scoped sync on PostgreSQL: the scenarios every storage runs (``ScopeScenario``, also run
/// on SQLite by FieldMergeSyncTests' ScopeServerTests), the scoped storage's answers call by
/// call against SQLite's, and a data set made before scopes upgraded by servers opening it
/// together.
@Suite(.enabled(if: PostgresTestEnvironment.shouldRun, "FIELDMERGE_POSTGRES_URL is not set: PostgreSQL suite skipped (Scripts/with-postgres swift test runs it)"))
struct PostgresScopeTests {
    @Test(arguments: ScopeScenario.allCases, PostgresWriteOrder.allCases)
    func scenario(_ scenario: ScopeScenario, order: PostgresWriteOrder) async throws {
        try await PostgresTestDatabase.with { database in
            try await scenario.run { try await database.server(TeamApp.schema, scopes: TeamApp.rules, order: order) }
        }
    }

    @Test(arguments: PostgresWriteOrder.allCases)
    func everyScopedReadAnswersAsOnSQLite(order: PostgresWriteOrder) async throws {
        try await PostgresTestDatabase.with { database in
            let sqlite = try RevisionServer(.memory, schema: TeamApp.schema, options: TeamApp.options())
            let postgres = try await database.server(TeamApp.schema, scopes: TeamApp.rules, order: order)
            for server in [sqlite, postgres] { try await Self.moveAndDelete(on: server) }
            let expected = try await Self.scopedReads(sqlite)
            let found = try await Self.scopedReads(postgres)
            #expect(found.count == expected.count)
            for (line, (got, want)) in zip(found, expected).enumerated() where got != want {
                Issue.record("line \(line): PostgreSQL answers \(got), SQLite \(want)")
            }
            // Roots moved, departed and kept in tombstones: the comparison saw each.
            #expect(expected.contains { $0.hasPrefix("departures tasks only([1])") && $0.hasSuffix(": 1") })
            #expect(expected.contains { $0.hasPrefix("deletion notes#3: ") && $0.hasSuffix("root 2") })
        }
    }

    @Test func aDataSetMadeBeforeScopesGetsItsRootsFromServersOpeningItTogether() async throws {
        try await PostgresTestDatabase.with { database in
            _ = try await ScopeScenario.seed(try await database.server(TeamApp.schema, scopes: TeamApp.rules))
            // What a data set made before scopes lacks (dropping a column drops its index).
            let schema = "\"\(database.url.schema)\""
            for entity in TeamApp.schema.entities {
                try await database.execute("ALTER TABLE \(schema).\"\(entity.name)\" DROP COLUMN \"__fm_root\"")
            }
            try await database.execute("ALTER TABLE \(schema).\"__fm_deleted\" DROP COLUMN \"root\"")
            try await database.execute("DROP TABLE \(schema).\"__fm_departed\", \(schema).\"__fm_scopes\"")

            let url = database.url
            let held = try await withThrowingTaskGroup(of: [Int64].self) { group in
                for _ in 0..<3 {
                    group.addTask {
                        let connector = PostgresConnector(url)
                        do {
                            let server = try await RevisionServer(
                                storage: try PostgresServerStorage(connector), schema: TeamApp.schema, options: TeamApp.options())
                            var ann = ScopedDevice(TeamApp.ann)
                            try await ann.sync(server)
                            await connector.shutdown()
                            return ann.ids("tasks") + ann.ids("notes")
                        } catch {
                            await connector.shutdown()
                            throw error
                        }
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(held == Array(repeating: [1, 2, 1, 2], count: 3))
            let rootIndexes = try await database.count(
                "SELECT count(*) FROM pg_index i JOIN pg_class c ON c.oid = i.indrelid JOIN pg_namespace n ON n.oid = c.relnamespace "
                    + "JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0] "
                    + "WHERE n.nspname = $1 AND a.attname = '__fm_root' AND i.indpred IS NOT NULL", url.schema)
            #expect(rootIndexes == Int64(TeamApp.schema.entities.count))
            let others = try await database.count(
                "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 "
                    + "AND c.relname IN ('__fm_deleted_root', '__fm_departed', '__fm_departed_revision', '__fm_scopes')", url.schema)
            #expect(others == 4)
        }
    }

    /// Moves task 1 to project 2, deletes note 3 and project 3 (its tasks lose their project,
    /// and with it their root), as the admin.
    static func moveAndDelete(on server: RevisionServer) async throws {
        var admin = try await ScopeScenario.seed(server)
        let task = admin.records["tasks#1"]!.revision!
        try await admin.sync(server, sending: [Send.changeSet(Send.update("tasks", 1, revision: task, field: 1, .integer(2), width: 2))])
        let note = admin.records["notes#3"]!.revision!
        try await admin.sync(server, sending: [Send.changeSet(Send.delete("notes", 3, revision: note, width: 2))])
        let project = admin.records["projects#3"]!.revision!
        try await admin.sync(server, sending: [Send.changeSet(Send.delete("projects", 3, revision: project, width: 2))])
    }

    /// Every read of ``ScopedServerStorage`` on `server`'s storage, as lines: each entity's
    /// changes, records, ids, revisions and departures under several root filters and
    /// windows, each record's root and tombstone, and the grants' selects.
    static func scopedReads(_ server: RevisionServer) async throws -> [String] {
        let storage = server.unsafeStorage as! any ScopedServerStorage
        let entities = await server.entities
        let latest = await server.maxRevision
        let filters: [RootFilter] = [.every, .only([]), .only([1]), .only([2, 3]), .only([1, 2, 3, 4]), .except([]), .except([1]), .except([2, 3])]
        let windows: [(Int64, Int64)] = [(0, latest), (1, latest), (latest - 2, latest), (0, latest - 1)]
        func row(_ row: ServerRow) -> String {
            "\(row.record.id)@\(row.revision)/\(row.created) root \(row.root.map(String.init) ?? "-") \(row.record.values.map { "\($0)" })"
        }
        func deletion(_ deletion: Deletion) -> String {
            "\(deletion.id)@\(deletion.revision) root \(deletion.root.map(String.init) ?? "-")"
        }
        return try await storage.read { () async throws -> [String] in
            var lines: [String] = []
            for entity in entities {
                for filter in filters {
                    for (after, through) in windows {
                        let (alive, deleted) = try await storage.changes(entity, roots: filter, after: after, through: through)
                        lines.append("changes \(entity.name) \(filter) \(after)...\(through): \(alive.map(row)) \(deleted.map(deletion))")
                        let departed = try await storage.departures(entity, roots: filter, after: after, through: through)
                        lines.append("departures \(entity.name) \(filter) \(after)...\(through): \(departed.map(String.init).joined(separator: ","))")
                    }
                    for through in [latest, latest - 1] {
                        lines.append("records \(entity.name) \(filter) ...\(through): \(try await storage.records(entity, roots: filter, through: through).map(row))")
                    }
                    lines.append("ids \(entity.name) \(filter): \(try await storage.ids(entity, roots: filter))")
                    for (after, limit) in [(0, 100), (0, 3), (1, 1), (latest - 2, 100)] {
                        let revisions = try await storage.revisions(entity, roots: filter, after: after, limit: limit)
                        lines.append("revisions \(entity.name) \(filter) after \(after) limit \(limit): \(revisions)")
                    }
                }
                let (alive, deleted) = try await storage.changes(entity, after: 0, through: latest)
                lines.append("unscoped changes \(entity.name): \(alive.map(row)) \(deleted.map(\.id))")
                for id in Int64(1)...8 {
                    if let found = try await storage.row(entity, id: id) { lines.append("row \(entity.name)#\(id): \(row(found))") }
                    if let found = try await storage.deletion(entity, id: id) {
                        lines.append("deletion \(entity.name)#\(id): root \(found.root.map(String.init) ?? "-")")
                    }
                }
            }
            let (projects, memberships) = (entities[1], entities[2])
            let selects: [(String, Int?, ServerEntity, [(field: Int?, values: [Value])])] = [
                ("owned by root", nil, projects, [(1, [.text("root")])]),
                ("owned by nobody", nil, projects, [(1, [.text("nobody")])]),
                ("owned by NUL", nil, projects, [(1, [.text("ro\u{0}ot")])]),
                ("named P1 or P2, id 2 or 3", nil, projects, [(0, [.text("P1"), .text("P2")]), (nil, [.integer(2), .integer(3)])]),
                ("no values", nil, projects, [(1, [])]),
                ("no conditions", nil, projects, []),
                ("projects of ann and bob", 1, memberships, [(0, [.text("ann"), .text("bob")])]),
                ("projects of memberships 1...9", 1, memberships, [(nil, (1...9).map { .integer($0) })]),
            ]
            for (name, select, entity, conditions) in selects {
                lines.append("select \(name): \(try await storage.select(select, of: entity, where: conditions).sorted())")
            }
            return lines
        }
    }
}
