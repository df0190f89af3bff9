@testable import FieldMergeServer
@testable import FieldMergeServerPostgres
import Testing

/// What needs no database: reading URLs and names, and failing to connect.
@Suite struct PostgresURLTests {
    @Test func fullURL_givesEveryPart() throws {
        let url = try PostgresURL("postgres://ann:p%40ss@db.example:6543/sets?sslmode=require&schema=tenant_1")
        #expect(url == PostgresURL(
            user: "ann", password: "p@ss", host: "db.example", port: 6543, database: "sets", tls: .require, schema: "tenant_1"))
        #expect(url.description == "postgres://ann:***@db.example:6543/sets?sslmode=require&schema=tenant_1")
    }

    @Test func defaults_port5432_noTLS_publicSchema() throws {
        let url = try PostgresURL("postgresql://ann@localhost/sets")
        #expect(url == PostgresURL(user: "ann", host: "localhost", database: "sets"))
    }

    @Test(arguments: [
        ("mysql://ann@host/db", "scheme"),
        ("ann@host/db", "postgres://"),
        ("postgres://host/db", "user"),
        ("postgres://ann@host", "database"),
        ("postgres://ann@host/", "database"),
        ("postgres://ann@:5432/db", "host"),
        ("postgres://ann@host:99999/db", "port"),
        ("postgres://ann@host:abc/db", "port"),
        ("postgres://ann@host/db?sslmode=maybe", "sslmode"),
        ("postgres://ann@host/db?schema=Bad-Name", "schema"),
        ("postgres://ann@host/db?color=red", "unknown parameter color"),
        ("postgres://ann:%zz@host/db", "percent"),
    ])
    func badURL_saysWhatIsWrong(_ text: String, _ reason: String) {
        let error = #expect(throws: PostgresURLError.self) { try PostgresURL(text) }
        #expect(error?.description.contains(reason) == true, "\(String(describing: error))")
    }

    @Test func badURL_hidesThePassword() {
        let error = #expect(throws: PostgresURLError.self) { try PostgresURL("postgres://ann:secret@host/db?sslmode=no") }
        #expect(error?.description.contains("secret") == false)
    }

    @Test func identifiers_areQuotedOrRefused() throws {
        #expect(try PostgresIdentifier.quote("a\"b") == "\"a\"\"b\"")
        #expect(throws: PostgresIdentifierError.self) { try PostgresIdentifier.quote(String(repeating: "x", count: 64)) }
        #expect(throws: PostgresIdentifierError.self) { try PostgresIdentifier.quote("") }
        #expect(PostgresIdentifier.isPlainName("fm_test_1"))
        #expect(!PostgresIdentifier.isPlainName("1abc"))
        #expect(!PostgresIdentifier.isPlainName("a;drop"))
    }

    @Test func schemaThatIsNotAPlainName_isRefused() async {
        let connector = PostgresConnector(PostgresURL(user: "u", host: "h", database: "d"))
        let error = #expect(throws: ServerError.self) { _ = try PostgresServerStorage(connector, schema: "x\"; DROP TABLE y") }
        #expect(error?.code == .storage)
        await connector.shutdown()
    }

    @Test func unreachableDatabase_isAStorageErrorWithItsCause() async throws {
        // Port 1 on loopback: nothing listens there, so the connection is refused at once.
        let connector = PostgresConnector(try PostgresURL("postgres://nobody:secret@127.0.0.1:1/none"))
        let error = await #expect(throws: ServerError.self) {
            _ = try await RevisionServer(storage: try PostgresServerStorage(connector), schema: try postgresSchema())
        }
        #expect(error?.code == .storage)
        #expect(error?.message.contains("cannot connect to postgres://nobody:***@127.0.0.1:1/none") == true, "\(String(describing: error))")
        #expect(error?.cause != nil)
        #expect(error?.message.contains("secret") == false)
        await connector.shutdown()
    }
}
