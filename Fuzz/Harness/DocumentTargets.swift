import FieldMerge
import FieldMergeJSON
import Foundation

/// Any bytes: a schema or a `DocumentError`; a schema decoded writes out to a document that
/// decodes to the same schema (outline, fingerprint, version and defaults).
func fuzzSchemaDocument(_ bytes: UnsafeRawBufferPointer) {
    guard let json = try? JSONValue.parse(Data(bytes)), let schema = try? SchemaDocument.decode(json) else { return }
    let written = SchemaDocument.encode(schema)
    let again: Schema
    do {
        again = try SchemaDocument.decode(JSONValue.parse(Data(written.rendered().utf8)))
    } catch {
        fatalError("fuzz property failed: a written schema does not read back: \(error)\n\(written.rendered())")
    }
    require(SchemaOutline(again) == SchemaOutline(schema), "a schema changed through encode and decode")
    require(again.fingerprint == schema.fingerprint, "the fingerprint changed through encode and decode")
    require(again.version == schema.version, "the version changed through encode and decode")
    require(
        again.entities.map { $0.fields.map(\.defaultValue) } == schema.entities.map { $0.fields.map(\.defaultValue) },
        "default values changed through encode and decode")
}

/// Any bytes: a merge document or a `DocumentError`; a document read runs its merge, which
/// reports or throws a `DocumentError`; the report's JSON text reads back as the report.
func fuzzMergeDocument(_ bytes: UnsafeRawBufferPointer) {
    guard let json = try? JSONValue.parse(Data(bytes)), let document = try? MergeDocument(json) else { return }
    guard let report = try? document.run() else { return }
    let text = report.rendered()
    do {
        let again = try JSONValue.parse(Data(text.utf8))
        require(again.mismatches(against: report).isEmpty && report.mismatches(against: again).isEmpty,
                "a merge report changed through its JSON text:\n\(text)")
    } catch {
        fatalError("fuzz property failed: a merge report does not read back: \(error)\n\(text)")
    }
}
