import FieldMerge
import FieldMergeJSON
import FieldMergeProtocol
import FieldMergeServer
import FieldMergeServerAuth
import FieldMergeServerSQLite
import Foundation
import Testing

/// Replays `Specs/conformance/scopes/*.json`: a schema and a policy with scopes, then
/// requests sent as the exact JSON written there, each by the user of its `as` (`sub`,
/// `roles`), each response matched against `expected` (objects by the keys given, arrays
/// whole); or `cases` of policies whose scope rules are refused with `expectedError`.
@Suite struct ScopeConformanceTests {
    static let folder = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Specs/conformance/scopes")

    static var vectors: [String] {
        ((try? FileManager.default.contentsOfDirectory(atPath: folder.path)) ?? []).filter { $0.hasSuffix(".json") }.sorted()
    }

    @Test func vectorsArePresent() {
        #expect(Self.vectors.count >= 4)
    }

    @Test(arguments: vectors)
    func vector(_ file: String) async throws {
        let json = try JSONValue.parse(Data(contentsOf: Self.folder.appendingPathComponent(file)))
        let schema = try SchemaDocument.decode(try #require(json["schema"], "\(file): needs a schema"))
        if case .array(let cases)? = json["cases"] {
            for (index, refused) in cases.enumerated() {
                let policy = try #require(refused["policy"])
                let error = #expect(throws: DocumentError.self, "\(file) case \(index)") {
                    try AccessPolicy.decode(Data(policy.rendered().utf8), schema: schema)
                }
                if case .string(let path)? = refused["expectedError"]?["path"] { #expect(error?.path == path, "\(file) case \(index): \(error.map(String.init(describing:)) ?? "")") }
                if case .string(let message)? = refused["expectedError"]?["message"] { #expect(error?.message == message, "\(file) case \(index)") }
            }
            return
        }
        let policy = try AccessPolicy.decode(Data(try #require(json["policy"]).rendered().utf8), schema: schema)
        var options = RevisionServer.Options()
        options.enforce(policy)  // scopes, write rules and read rules, as `serve --policy` does
        let server = try RevisionServer(.memory, schema: schema, options: options)
        let codec = WireCodec(schema: schema)
        guard case .array(let steps)? = json["steps"] else {
            Issue.record("\(file): needs steps or cases")
            return
        }
        for (index, step) in steps.enumerated() {
            guard let request = step["request"], let expected = step["expected"], case .string(let user)? = step["as"]?["sub"] else {
                Issue.record("\(file) step \(index): needs as.sub, request and expected")
                continue
            }
            var roles: Set<String> = []
            if case .array(let names)? = step["as"]?["roles"] {
                for case .string(let role) in names { roles.insert(role) }
            }
            let decoded = try codec.decodeRequest(Array(request.rendered().utf8))
            let response = try await server.handle(decoded, identity: SyncIdentity(user: user, roles: roles))
            let actual = try JSONValue.parse(Data(codec.encode(response)))
            let mismatches = actual.mismatches(against: expected)
            #expect(mismatches.isEmpty, "\(file) step \(index): \(mismatches.joined(separator: "; ")) in \(actual.rendered())")
        }
    }
}
