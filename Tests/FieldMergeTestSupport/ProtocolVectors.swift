import FieldMerge
import FieldMergeJSON
import FieldMergeProtocol
import FieldMergeServer
import Foundation
import Testing

/// The protocol's conformance vectors, `Specs/conformance/protocol/*.json`: each builds a
/// server, seeds it, sends its requests as the exact JSON bytes written there, and matches
/// each response. Every storage's suite replays them on its own server
/// (`@Test(arguments: ProtocolVectors.files)`).
public enum ProtocolVectors {
    public static let folder = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Specs/conformance/protocol")

    public static var files: [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).filter { $0.hasSuffix(".json") }.sorted()
    }

    /// The servers' wall clock in every vector.
    public static let wall = 1_700_000_000_000 as UInt64

    /// Replays the vector `file` on the server `makeServer` gives for its schema;
    /// `setNextID` sets an entity's next permanent id (`setup.nextIDs`) in its storage.
    public static func replay(
        _ file: String, makeServer: (Schema) async throws -> RevisionServer, setNextID: (String, Int64) async throws -> Void
    ) async throws {
        let json = try JSONValue.parse(Data(contentsOf: folder.appendingPathComponent(file)))
        guard let schemaJSON = json["schema"], let steps = json["steps"], case .array(let stepList) = steps else {
            Issue.record("\(file): needs schema and steps")
            return
        }
        let schema = try SchemaDocument.decode(schemaJSON)
        let server = try await makeServer(schema)
        try await seed(server, json["setup"], schema: schema, setNextID: setNextID)
        let codec = WireCodec(schema: schema)
        for (index, step) in stepList.enumerated() {
            if let request = step["request"], case .string(let code)? = step["expectedError"]?["code"] {
                // Refused as a whole: the codec refuses it, so the server never sees it.
                let error = #expect(throws: WireError.self, "\(file) step \(index)") {
                    try codec.decodeRequest(Array(request.rendered().utf8))
                }
                #expect(error?.code.rawValue == code, "\(file) step \(index)")
                continue
            }
            guard let request = step["request"], let expected = step["expected"] else {
                Issue.record("\(file) step \(index): needs request and expected, or expectedError")
                continue
            }
            let decoded = try codec.decodeRequest(Array(request.rendered().utf8))
            let response = try await server.handle(decoded)
            let actual = try JSONValue.parse(Data(codec.encode(response)))
            let mismatches = actual.mismatches(against: expected)
            #expect(mismatches.isEmpty, "\(file) step \(index): \(mismatches.joined(separator: "; "))")
        }
    }

    /// `setup.seed`: one record of `entity` per revision, its `field` set to "<entity> <n>";
    /// `setup.nextIDs`: the next permanent id per entity.
    private static func seed(
        _ server: RevisionServer, _ setup: JSONValue?, schema: Schema, setNextID: (String, Int64) async throws -> Void
    ) async throws {
        guard let setup else { return }
        if let seed = setup["seed"], case .string(let name)? = seed["entity"], case .string(let fieldName)? = seed["field"],
            case .integer(let count)? = seed["records"], let entity = schema.entity(name), let field = entity.fieldIndex(fieldName)
        {
            for n in 1...Int(count) {
                var values = ContiguousArray<Value>(repeating: .null, count: entity.fields.count)
                values[field] = .text("\(name) \(n)")
                let record = WireRecord(id: -1, present: FieldMask([field]), values: values)
                let request = SyncRequest(maxRevision: Int64(n - 1), changeSets: [ChangeSet(entities: [
                    EntityChanges(entity: name, create: [-1], records: [record]),
                ])], limit: 1)
                _ = try await server.handle(request)
            }
        }
        if case .object(let next)? = setup["nextIDs"] {
            for (entity, value) in next {
                guard case .integer(let id) = value else { continue }
                try await setNextID(entity, id)
            }
        }
    }
}

