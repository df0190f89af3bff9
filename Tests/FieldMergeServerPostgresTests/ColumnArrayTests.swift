import FieldMerge
import FieldMergeProtocol
@testable import FieldMergeServer
@testable import FieldMergeServerPostgres
import Testing

/// A run of record writes is bound as one array per column (`unnest`,
/// `PostgresColumnArray`): every type, NULLs among values, and text sets whose members need
/// quoting come back exactly as written, for creates and for updates.
@Suite(.enabled(if: PostgresTestEnvironment.shouldRun, "FIELDMERGE_POSTGRES_URL is not set: PostgreSQL suite skipped (Scripts/with-postgres swift test runs it)"))
struct ColumnArrayTests {
    static let awkward: [TextSet] = [
        [], ["a"], ["quote\"d", "back\\slash", "{brace}", "comma,here", "NULL", " spaced ", ""], ["ünï", "日本", "emoji 🙂"],
    ]

    /// The values of task `index`: each field NULL now and then, text sets of every kind.
    static func task(_ index: Int, list: Int64, round: Int) -> [Value] {
        let null = (index + round) % 5 == 0
        return [
            null ? .null : .text("task \(index) \"r\(round)\" \\ ,{}"),
            index % 3 == 0 ? .null : .bool(index % 2 == 0),
            .integer(Int64(index * 7 - 100 + round)),
            index % 4 == 0 ? .null : .integer(list),
            null ? .null : .date(1_700_000_000_000 + Int64(index * 86_400_000)),
            index % 6 == 0 ? .null : .real(Double(index) / 3 + Double(round)),
            index % 7 == 0 ? .null : .textSet(awkward[(index + round) % awkward.count]),
            index % 2 == 0 ? .null : .blob([UInt8(index), 0, 255, UInt8(round)]),
        ]
    }

    @Test func aRunOfEveryType_comesBackAsWritten_createdAndUpdated() async throws {
        try await PostgresTestDatabase.with { database in
            let connector = database.connector(maximumConnections: 1)
            let server = try await RevisionServer(storage: try PostgresServerStorage(connector), schema: try postgresSchema())
            let storage = try #require(server.unsafeStorage as? PostgresServerStorage)
            _ = try await server.handle(SyncRequest(maxRevision: 0, changeSets: [createList("home")]))
            let count = 40
            let fields = FieldMask.all(count: 8)
            let created = (0..<count).map { WireRecord(id: Int64(-1 - $0), present: fields, values: ContiguousArray(Self.task($0, list: 1, round: 0))) }
            let answer = try await server.handle(SyncRequest(
                maxRevision: 1, changeSets: [ChangeSet(entities: [EntityChanges(entity: "tasks", create: created.map(\.id), records: created)])]))
            #expect(answer.changeSets.last?.conflict != true)
            var ids: [Int64: Int] = [:]
            for record in answer.changeSets.last?.entities.first?.records ?? [] {
                if let old = record.oldID { ids[record.id] = Int(-1 - old) }
            }
            #expect(ids.count == count)
            try await Self.expectStored(server, ids: ids, round: 0)

            // The same records updated in one change set (rows with per-field revisions).
            let updated = ids.map { id, index in
                WireRecord(id: id, present: fields, values: ContiguousArray(Self.task(index, list: 1, round: 1)), revision: 2)
            }
            let second = try await server.handle(SyncRequest(
                maxRevision: 2, changeSets: [ChangeSet(entities: [EntityChanges(entity: "tasks", update: updated.map(\.id), records: updated)])]))
            #expect(second.changeSets.last?.conflict != true)
            try await Self.expectStored(server, ids: ids, round: 1)
            // The runs went out as column arrays.
            #expect(try await PreparedStatementTests.prepared(storage).values.contains { $0.contains("FROM unnest($2::BIGINT[]") })
        }
    }

    static func expectStored(_ server: RevisionServer, ids: [Int64: Int], round: Int) async throws {
        let all = try await server.handle(SyncRequest(maxRevision: 0, changeSets: []))
        let tasks = all.changeSets.flatMap { $0.entities.filter { $0.entity == "tasks" }.flatMap(\.records) }
        #expect(tasks.count == ids.count)
        for record in tasks {
            let index = try #require(ids[record.id])
            #expect(Array(record.values) == task(index, list: 1, round: round), "task \(index), round \(round)")
        }
    }
}
