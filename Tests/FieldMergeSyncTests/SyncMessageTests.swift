import FieldMerge
import FieldMergeProtocol
import FieldMergeSQLite
import FieldMergeServer
import FieldMergeServerSQLite
import FieldMergeSync
import FieldMergeTestSupport
import Testing

/// What a sync says when it fails (#30, "Messages").
@Suite struct SyncMessageTests {
    /// Two builds of one schema version with other contents: the 409 says so and lists the
    /// lines that differ, with no byte offset.
    @Test func sameVersionAnotherFingerprint_listsTheLinesThatDiffer() async throws {
        let serverSchema = try syncSchema()
        var entities = serverSchema.entities
        entities[0].fields.append(Field("color", .text))
        let appSchema = try Schema(entities, version: serverSchema.version)
        let transport = InProcessTransport(server: try RevisionServer(.memory, schema: serverSchema))
        let client = SyncClient(store: try Store(.memory, schema: appSchema), transport: transport)
        let error = try #require(await #expect(throws: SyncError.self) { try await client.sync() })
        #expect(error.code == .rejected && !error.isRetryable)
        let rejected = try #require(error.cause as? SyncRequestRejected)
        #expect(rejected.status == 409 && rejected.code == "incompatibleSchema")
        #expect(rejected.schema == serverSchema.describedLines)
        #expect(error.message.contains("same version \(serverSchema.version)"))
        #expect(error.message.contains("the server's schema lacks: field lists.color text"))
        #expect(!error.message.contains("at byte"))
        #expect(!error.message.contains("update the server"))
    }

    /// The schema lines travel in the 409's body, and back.
    @Test func theErrorBodyCarriesTheServersSchemaLines() throws {
        var body = WireErrorBody(error: "incompatibleSchema", message: "m")
        body.schema = ["entity lists", "  field lists.name \"text\""]
        #expect(WireErrorBody(decoding: body.json) == body)
        #expect(WireErrorBody(decoding: WireErrorBody(error: "x", message: "y").json)?.schema == nil)
    }

    /// `error.isRetryable` compiles on `any Error`, as in a `catch` that mixes a sync with
    /// other calls, and tells the sync's errors from the app's own.
    @Test func isRetryable_readsOnAnyError() async throws {
        struct AppError: Error {}
        struct Offline: SyncTransport {
            func send(_ body: [UInt8], gzip: Bool) async throws -> [UInt8] { throw TransportError("offline") }
        }
        let client = SyncClient(store: try Store(.memory, schema: try syncSchema()), transport: Offline())
        var retryable: Bool?
        do {
            try await client.write { store in _ = try store.insert("lists", values: ["Home"]) }
            _ = try await client.sync()
        } catch {
            retryable = error.isRetryable
        }
        #expect(retryable == true)
        let appError: any Error = AppError()
        #expect(!appError.isRetryable)
        #expect((TransportError("x") as any Error).isRetryable)
        #expect(!(SyncRequestRejected(status: 400, code: "badRequest", message: "") as any Error).isRetryable)
    }
}
