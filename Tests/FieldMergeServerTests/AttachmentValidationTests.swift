import FieldMerge
import FieldMergeProtocol
import FieldMergeServer
import FieldMergeServerSQLite
import FieldMergeTestSupport
import Testing

/// The server refuses a request that writes anything but a canonical reference to an
/// attachment field, before anything is stored (Specs/attachments.md).
@Suite struct AttachmentValidationTests {
    static let hex = String(repeating: "0f", count: 32)

    func server() throws -> RevisionServer {
        try RevisionServer(.memory, schema: Schema([Entity("photos", fields: [Field("caption", .text), Field("image", .attachment)])]))
    }

    @Test(arguments: ["photo.jpg", "sha256:\(hex);10;Image/Jpeg", "sha256:\(hex);010;image/jpeg", "sha256:\(hex.uppercased());10;image/jpeg"])
    func aMalformedReference_isABadRequest_andNothingIsStored(_ text: String) async throws {
        let server = try server()
        let request = SyncRequest(maxRevision: 0, changeSets: [Send.changeSet(Send.create("photos", -1, [.text("c"), .text(text)]))])
        let error = await #expect(throws: ServerError.self) { try await server.handle(request) }
        #expect(error?.code == .badRequest)
        #expect("\(error!)".contains("field 'image'") && "\(error!)".contains("not an attachment reference"))
        #expect(await server.maxRevision == 0)
    }

    @Test func aCanonicalReference_andNull_areTaken_andAnUpdateIsCheckedToo() async throws {
        let server = try server()
        let good = Value.text("sha256:\(Self.hex);10;image/jpeg")
        let create = SyncRequest(
            maxRevision: 0, changeSets: [Send.changeSet(Send.create("photos", -1, [.text("c"), good]), Send.create("photos", -2, [.text("d"), .null]))])
        #expect(try await server.handle(create).maxRevision == 1)
        let bad = SyncRequest(maxRevision: 1, changeSets: [Send.changeSet(Send.update("photos", 1, revision: 1, field: 1, .text("x"), width: 2))])
        await #expect(throws: ServerError.self) { try await server.handle(bad) }
        // A field the update leaves out is not checked (it is not written).
        let caption = SyncRequest(maxRevision: 1, changeSets: [Send.changeSet(Send.update("photos", 1, revision: 1, field: 0, .text("y"), width: 2))])
        #expect(try await server.handle(caption).maxRevision == 2)
    }
}
