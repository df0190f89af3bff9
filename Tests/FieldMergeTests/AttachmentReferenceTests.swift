import Testing
@testable import FieldMerge

/// The text form of an attachment reference: one canonical form, everything else refused.
@Suite struct AttachmentReferenceTests {
    static let hex = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"

    @Test func roundTrip_ofTheTextForm() throws {
        let reference = try AttachmentReference(sha256: Self.hex, size: 5_000_000, mediaType: "image/jpeg")
        #expect(reference.text == "sha256:\(Self.hex);5000000;image/jpeg")
        let parsed = try AttachmentReference(parsing: reference.text)
        #expect(parsed == reference)
        #expect(parsed.sha256 == Self.hex && parsed.size == 5_000_000 && parsed.mediaType == "image/jpeg")
        for text in [
            "sha256:\(Self.hex);0;application/octet-stream", "sha256:\(Self.hex);\(Int64.max);application/vnd.ms-excel+xml",
            "sha256:\(Self.hex);1;a/b", "sha256:\(Self.hex);12;\(String(repeating: "x", count: 64))/\(String(repeating: "y", count: 64))",
        ] {
            #expect(try AttachmentReference(parsing: text).text == text)
        }
        #expect(AttachmentReference.maxTextLength == "sha256:\(Self.hex);\(Int64.max);\(String(repeating: "x", count: 64))/\(String(repeating: "y", count: 64))".utf8.count)
    }

    @Test(arguments: [
        "", "sha256:", "SHA256:\(hex);1;text/plain", "sha1:\(hex);1;text/plain",
        "sha256:\(hex.uppercased());1;text/plain", "sha256:\(hex.dropLast());1;text/plain", "sha256:\(hex)0;1;text/plain",
        "sha256:\(hex.dropLast())g;1;text/plain", "sha256:\(hex);01;text/plain", "sha256:\(hex);-1;text/plain",
        "sha256:\(hex);+1;text/plain", "sha256:\(hex);9223372036854775808;text/plain", "sha256:\(hex);;text/plain",
        "sha256:\(hex);1", "sha256:\(hex);1;", "sha256:\(hex);1;text", "sha256:\(hex);1;text/", "sha256:\(hex);1;/plain",
        "sha256:\(hex);1;text/plain/x", "sha256:\(hex);1;Text/Plain", "sha256:\(hex);1;text/plain; charset=utf-8",
        "sha256:\(hex);1;text/plain;charset=utf-8", "sha256:\(hex);1;text/pl ain", "sha256:\(hex);1;text/plain\n",
        "sha256:\(hex);1;-text/plain", "sha256:\(hex);1;text/../../etc", "sha256:\(hex);1;text/pläin",
        "sha256:\(hex);1;text/\(String(repeating: "x", count: 65))", " sha256:\(hex);1;text/plain",
    ])
    func malformedReferences_areRefused(_ text: String) {
        let error = #expect(throws: AttachmentReferenceError.self) { try AttachmentReference(parsing: text) }
        #expect(error?.description.hasPrefix("not an attachment reference") == true)
    }

    @Test func theInitializer_refusesWhatParsingRefuses() {
        #expect(throws: AttachmentReferenceError.self) { try AttachmentReference(sha256: "abc", size: 1, mediaType: "text/plain") }
        #expect(throws: AttachmentReferenceError.self) { try AttachmentReference(sha256: Self.hex, size: -1, mediaType: "text/plain") }
        #expect(throws: AttachmentReferenceError.self) { try AttachmentReference(sha256: Self.hex, size: 1, mediaType: "TEXT/plain") }
    }

    @Test func isSHA256_takesOnly64LowercaseHexDigits() {
        #expect(AttachmentReference.isSHA256(Self.hex))
        #expect(!AttachmentReference.isSHA256(Self.hex.uppercased()))
        #expect(!AttachmentReference.isSHA256(String(Self.hex.dropLast())))
        #expect(!AttachmentReference.isSHA256("../x"))
        #expect(!AttachmentReference.isSHA256(Self.hex + "/"))
    }

    @Test func theFieldType_isTextNamedAttachment_andRefusesNonCanonicalText() throws {
        #expect(FieldType.attachment.name == "attachment")
        #expect(FieldType.attachment.valueKind == .text)
        #expect(FieldType(plainName: "attachment") == .attachment)
        let good = Value.text("sha256:\(Self.hex);4;text/plain")
        #expect(good.fits(.attachment))
        #expect(FieldType.attachment.refusal(of: good) == nil)
        #expect(FieldType.attachment.refusal(of: .null) == nil)
        #expect(FieldType.attachment.refusal(of: .text("photo.jpg"))?.contains("starts with 'sha256:'") == true)
        #expect(FieldType.text.refusal(of: .text("photo.jpg")) == nil)
        #expect(!Value.integer(1).fits(.attachment))
        // Strategies: any that decides text as a whole, not the line merge of free text.
        #expect(FieldStrategy.lastEditWins.applies(to: .attachment) && FieldStrategy.max.applies(to: .attachment))
        #expect(!FieldStrategy.text.applies(to: .attachment))
    }

    @Test func aSchemaWithAnAttachmentField_mergesItLastEditWins() throws {
        let entity = Entity("photos", fields: [Field("caption", .text), Field("image", .attachment)])
        let schema = try Schema([entity])
        let image = try #require(schema.entity("photos")?.fields.last)
        #expect(image.type == .attachment)
        let older = Value.text("sha256:\(Self.hex);4;text/plain")
        let newer = Value.text("sha256:\(String(repeating: "a", count: 64));9;image/png")
        let base = Record(entity, id: 1, values: ["c", .null], stamp: stamp(100))
        var local = base, remote = base
        local.set(1, older, stamp: stamp(200))
        remote.set(1, newer, stamp: stamp(300, replicaR))
        let result = merge(entity, base, local, remote)
        #expect(result.merged.values[1] == newer)
    }
}
