import FieldMerge
import FieldMergeServer
import FieldMergeServerPostgres
import FieldMergeSQLite
import FieldMergeSync
import FieldMergeTestSupport
import Testing

/// The FieldMergeServerPostgres catalog's snippet (between `// FieldMergeServerPostgres.md
/// block begin` and `… end`, checked by `DocSnippets`): a server on PostgreSQL whose live
/// subscribers hear another process's writes.
@Suite struct PostgresArticleTests {
    @Test func docSnippet_servesAndHearsAnotherProcess() async throws {
        try await PostgresTestDatabase.with { database in
            let url = database.url
            let schema = try syncSchema()
            let options = RevisionServer.Options()

            // FieldMergeServerPostgres.md block begin
            let connector = PostgresConnector(url)
            let storage = try PostgresServerStorage(connector)            // the URL's schema, "public" by default
            let source = storage.liveSource
            let server = try await RevisionServer(storage: storage, schema: schema, options: options)
            let listener = PostgresLiveListener(source) { revision in server.live.advance(to: revision) }
            // FieldMergeServerPostgres.md block end

            let events = Collected(try server.live.subscribe(identity: nil))
            // Another process on the same data set takes a write.
            let other = try await database.server(schema, order: .parallel)
            let device = SyncClient(store: try Store(.memory, schema: schema, replica: ReplicaID(1)), transport: InProcessTransport(server: other))
            try await device.write { _ = try $0.insert("lists", values: ["Field notes"]) }
            #expect(try await device.sync().sent == 1)
            var heard = false
            for _ in 0..<2_000 where !heard {
                heard = events.all.contains { event in
                    if case .changes(_, let revision, _) = event { return revision == 1 }
                    return false
                }
                if !heard { try await Task.sleep(for: .milliseconds(10)) }
            }
            #expect(heard, "\(events.all)")
            // This server reads what the other wrote.
            let reader = SyncClient(store: try Store(.memory, schema: schema, replica: ReplicaID(2)), transport: InProcessTransport(server: server))
            #expect(try await reader.sync().received == 1)
            events.stop()
            await listener.shutdown()
            await connector.shutdown()
        }
    }
}
