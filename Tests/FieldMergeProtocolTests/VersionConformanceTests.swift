import FieldMerge
import FieldMergeJSON
import FieldMergeProtocol
import Foundation
import Testing

// The conformance vectors of Specs/schema.md, "Mixed-version fleets": every file in
// Specs/conformance/versions/ holds an "old" and a "new" schema document, the old version's
// fingerprint, a "request" of the old version and the change sets it is "lifted" to, and a
// "response" of the new version and what it is "projected" to for the old client.

let versionVectorDirectory = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("Specs/conformance/versions")

let versionVectorFiles: [String] =
    ((try? FileManager.default.contentsOfDirectory(atPath: versionVectorDirectory.path)) ?? [])
    .filter { $0.hasSuffix(".json") }
    .sorted()

@Suite struct VersionConformanceTests {
    @Test func theVectorsAreThere() {
        #expect(!versionVectorFiles.isEmpty)
    }

    @Test(arguments: versionVectorFiles)
    func vector(_ file: String) throws {
        let document = try JSONValue.parse(Data(contentsOf: versionVectorDirectory.appendingPathComponent(file)))
        let old = try SchemaDocument.decode(try #require(document["old"]))
        let new = try SchemaDocument.decode(try #require(document["new"]))
        #expect(document["oldFingerprint"] == .string(old.fingerprint), "the old version's fingerprint is \(old.fingerprint)")
        // The current names of the old entities, as a server's migration records them.
        var renamed: [String: String] = [:]
        for change in SchemaOutline(old).changes(to: SchemaOutline(new)) {
            if case .renameEntity(let from, let to) = change.kind { renamed[from] = to }
        }
        let older = try OlderSchema(
            SchemaOutline(old), version: old.version, currentNames: old.entities.map { renamed[$0.name] ?? $0.name })
        let codec = WireCodec(schema: new, older: [older])
        let oldCodec = WireCodec(schema: old)
        func bytes(_ key: String) throws -> [UInt8] { Array(try #require(document[key], "no \(key)").rendered().utf8) }

        let request = try codec.decodeRequest(try bytes("request"))
        let version = try #require(codec.version(fingerprint: request.schemaFingerprint), "the request's version is not recognised")
        #expect(request == (try oldCodec.decodeRequest(try bytes("request"))))
        let lifted = try codec.decodeRequest(try bytes("lifted"))
        #expect(version.lift(request.changeSets) == lifted.changeSets)

        let response = try codec.decodeResponse(try bytes("response"))
        let projected = try oldCodec.decodeResponse(try bytes("projected"))
        #expect(version.project(response) == projected)
        #expect(codec.codec(answering: request).schemaFingerprint == old.fingerprint)
    }
}
