import FieldMerge
@testable import FieldMergeSQLite
import Testing

/// An attachment field holds only canonical references (Specs/attachments.md).
@Suite struct StoreAttachmentTests {
    static let reference = Value.text("sha256:\(String(repeating: "ab", count: 32));2048;image/jpeg")

    func store() throws -> Store {
        let schema = try Schema([Entity("photos", fields: [Field("caption", .text), Field("image", .attachment)])])
        return try Store(.memory, schema: schema, replica: ReplicaID(1))
    }

    @Test func aCanonicalReference_isStoredAndReadBack() throws {
        let store = try store()
        let id = try store.insert("photos", values: ["beach", Self.reference])
        #expect(try store.record("photos", id: id)?.values[1] == Self.reference)
        let none = try store.insert("photos", values: ["no photo yet", .null])
        #expect(try store.record("photos", id: none)?.values[1] == .null)
        #expect(try store.database.rows("SELECT typeof(\"image\") FROM photos WHERE id = \(id)").first?.first == .text("text"))
    }

    @Test(arguments: [
        "photo.jpg", "sha256:\(String(repeating: "AB", count: 32));2048;image/jpeg",
        "sha256:\(String(repeating: "ab", count: 32));2048;image/JPEG", "sha256:\(String(repeating: "ab", count: 32));-1;image/jpeg",
    ])
    func aMalformedReference_isRefusedOnInsertAndUpdate(_ text: String) throws {
        let store = try store()
        let insert = #expect(throws: StoreError.self) { _ = try store.insert("photos", values: ["x", .text(text)]) }
        #expect(insert?.code == .invalidRecord)
        #expect(insert?.message.contains("field 'image'") == true && insert?.message.contains("not an attachment reference") == true)
        #expect(try store.database.rows("SELECT id FROM photos").isEmpty)

        let id = try store.insert("photos", values: ["x", Self.reference])
        let update = #expect(throws: StoreError.self) { _ = try store.update("photos", id: id, ["image": .text(text)]) }
        #expect(update?.code == .invalidRecord && update?.id == id)
        #expect(try store.record("photos", id: id)?.values[1] == Self.reference)
        // A text field takes the same text.
        _ = try store.update("photos", id: id, ["caption": .text(text)])
    }
}
