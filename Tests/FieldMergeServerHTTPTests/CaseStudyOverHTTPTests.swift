import FieldMerge
import FieldMergeJSON
import FieldMergeSync
import FieldMergeProtocol
import FieldMergeServer
import FieldMergeServerSQLite
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing

/// The case study's own request, typed by hand and sent with plain URLSession (not the
/// project's codec or transport), gets the case study's own answer.
@Suite struct CaseStudyOverHTTPTests {
    static let vector = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Specs/conformance/protocol/01-case-study-create.json")

    /// The request of `01-case-study-create.json`, as the case study prints it.
    static let request = """
        { "maxRevision": 1000,
          "changeSets": [
            { "types": ["screen_instances", "screen_instance_items"],
              "screen_instances": {
                "create": [-10], "update": [], "delete": [],
                "attributes": { "-10": { "screen_id": 749, "date": "2014-02-01 13:15:23.487+01", "comment": "" } } },
              "screen_instance_items": {
                "create": [-11, -12], "update": [], "delete": [],
                "attributes": { "-11": { "screen_instance_id": -10, "numeric_value": 2 },
                                "-12": { "screen_instance_id": -10, "numeric_value": 7 } } } } ] }
        """

    @Test func caseStudyRequest_byHand_getsCaseStudyAnswer() async throws {
        let document = try JSONValue.parse(Data(contentsOf: Self.vector))
        let schema = try SchemaDocument.decode(try #require(document["schema"]))
        let expected = try #require(document["steps"].flatMap { steps -> JSONValue? in
            guard case .array(let list) = steps else { return nil }
            return list.first?["expected"]
        })
        let server = try RevisionServer(.memory, schema: schema)
        try await Self.seed(server, schema: schema)

        try await withHTTPServer(server) { running in
            var request = URLRequest(url: running.syncURL)
            request.httpMethod = "POST"
            request.setValue("application/json", forHTTPHeaderField: "Content-Type")
            request.httpBody = Data(Self.request.utf8)
            let (data, response) = try await URLSession.shared.data(for: request)
            let http = try #require(response as? HTTPURLResponse)
            #expect(http.statusCode == 200)
            #expect(http.value(forHTTPHeaderField: "Content-Type") == "application/json")

            let answer = try JSONValue.parse(data)
            let mismatches = answer.mismatches(against: expected)
            #expect(mismatches.isEmpty, "\(mismatches.joined(separator: "; "))")
            // The case study's numbers, spelled out: -10 → 321 at revision 1001, its items
            // 412 and 413 pointing at 321.
            #expect(answer["maxRevision"] == .integer(1001))
            let instances = answer["changeSets"].flatMap { if case .array(let sets) = $0 { sets.first } else { nil } }?["screen_instances"]
            #expect(instances?["attributes"]?["321"]?["__oldId__"] == .integer(-10))
            #expect(instances?["attributes"]?["321"]?["revision"] == .integer(1001))
            #expect(await running.http.withServer { await $0.maxRevision } == 1001)
        }
    }

    /// Revisions 1...1000, one `screens` record each; permanent ids continue at 321 and 412.
    static func seed(_ server: RevisionServer, schema: Schema) async throws {
        let screens = try #require(schema.entity("screens"))
        for n in 1...1000 {
            let record = WireRecord(id: -1, present: FieldMask([0]), values: [.text("screens \(n)")])
            _ = try await server.handle(SyncRequest(
                maxRevision: Int64(n - 1),
                changeSets: [ChangeSet(entities: [EntityChanges(entity: screens.name, create: [-1], records: [record])])],
                limit: 1))
        }
        try server.database.run("INSERT OR REPLACE INTO \"__fm_ids\" VALUES ('screen_instances', 321), ('screen_instance_items', 412)")
    }
}
