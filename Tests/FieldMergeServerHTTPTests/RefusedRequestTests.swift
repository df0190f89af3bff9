import FieldMerge
import FieldMergeJSON
import FieldMergeServerHTTP
import FieldMergeSync
import FieldMergeProtocol
import FieldMergeServer
import FieldMergeServerSQLite
import Foundation
import Testing

/// Bodies the server cannot or will not take: the right status, the JSON error body, and
/// not one byte of state changed.
@Suite struct RefusedRequestTests {
    /// A valid request creating one list: what a malformed body is a broken copy of.
    static let valid = #"{"maxRevision":1,"changeSets":[{"types":["lists"],"lists":{"create":[-1],"update":[],"delete":[],"attributes":{"-1":{"name":"Home"}}}}]}"#

    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var body: [UInt8]
        var gzip = false
        var status: Int
        var error: String
        var testDescription: String { name }
    }

    static let cases: [Case] = {
        let valid = Array(Self.valid.utf8)
        let gzipped = Gzip.compress(valid)
        return [
            Case(name: "bad JSON", body: Array(valid.dropLast()), status: 400, error: "malformedJSON"),
            Case(name: "not JSON at all", body: Array("maxRevision=1".utf8), status: 400, error: "malformedJSON"),
            Case(name: "empty body", body: [], status: 400, error: "malformedJSON"),
            Case(name: "wrong type", body: Array(Self.valid.replacingOccurrences(of: #""create":[-1]"#, with: #""create":["-1"]"#).utf8), status: 400, error: "unexpectedType"),
            Case(name: "wrong value type", body: Array(Self.valid.replacingOccurrences(of: #""Home""#, with: "42").utf8), status: 400, error: "unexpectedType"),
            Case(name: "unknown entity", body: Array(Self.valid.replacingOccurrences(of: "lists", with: "boards").utf8), status: 400, error: "unknownEntity"),
            Case(name: "unknown field", body: Array(Self.valid.replacingOccurrences(of: #""name""#, with: #""title""#).utf8), status: 400, error: "unknownField"),
            Case(name: "truncated gzip", body: Array(gzipped.dropLast(9)), gzip: true, status: 400, error: "gzipTruncated"),
            Case(name: "gzip header on plain JSON", body: valid, gzip: true, status: 400, error: "gzipCorrupt"),
            Case(name: "positive id for a create (refused by the server)", body: Array(Self.valid.replacingOccurrences(of: "-1", with: "7").utf8), status: 400, error: "badRequest"),
            Case(name: "attributes for an id that is in no list", body: Array(Self.valid.replacingOccurrences(of: #""create":[-1]"#, with: #""create":[]"#).utf8), status: 400, error: "badRequest"),
            Case(name: "a temporary id created twice", body: Array(Self.valid.replacingOccurrences(of: #""create":[-1]"#, with: #""create":[-1,-1]"#).utf8), status: 400, error: "badRequest"),
            Case(name: "an update without a revision", body: Array(Self.valid.replacingOccurrences(of: #""create":[-1],"update":[]"#, with: #""create":[],"update":[1]"#).replacingOccurrences(of: #""-1":"#, with: #""1":"#).utf8), status: 400, error: "badRequest"),
            Case(name: "a delete without attributes", body: Array(Self.valid.replacingOccurrences(of: #""delete":[]"#, with: #""delete":[1]"#).utf8), status: 400, error: "badRequest"),
            Case(name: "another protocol version", body: Array(Self.valid.replacingOccurrences(of: #"{"maxRevision":1,"#, with: #"{"maxRevision":1,"protocolVersion":99,"#).utf8), status: 400, error: "unsupportedProtocolVersion"),
        ]
    }()

    @Test(arguments: cases)
    func malformedBody_is400WithErrorBody_andChangesNothing(_ refused: Case) async throws {
        try await withHTTPServer(try Self.seededServer()) { running in
            let before = try await running.state()
            let response = try await RawHTTP.exchange(
                port: running.port, headers: refused.gzip ? ["Content-Encoding": "gzip"] : [:], body: refused.body)
            #expect(response.status == refused.status)
            #expect(response.headers["content-type"] == "application/json")
            let error = try JSONValue.parse(Data(response.body))
            #expect(error["error"] == .string(refused.error))
            if case .string(let message)? = error["message"] { #expect(!message.isEmpty) } else { Issue.record("no message in \(error)") }
            #expect(try await running.state() == before)
            #expect(running.http.statistics.rejected == 1)
        }
    }

    @Test func bodyOverTheLimit_is413BeforeDecoding_andChangesNothing() async throws {
        let configuration = SyncHTTPServer.Configuration(maxRequestBytes: 1_000)
        try await withHTTPServer(try Self.seededServer(), configuration: configuration) { running in
            let before = try await running.state()
            // A valid request padded with whitespace past the limit.
            let body = Array(Self.valid.utf8) + [UInt8](repeating: 0x20, count: 2_000)
            let response = try await RawHTTP.exchange(port: running.port, body: body)
            #expect(response.status == 413)
            let error = try JSONValue.parse(Data(response.body))
            #expect(error["error"] == .string("tooLarge"))
            #expect(try await running.state() == before)

            // The same request within the limit goes through: the limit, not the body, refused it.
            let accepted = try await RawHTTP.exchange(port: running.port, body: Array(Self.valid.utf8))
            #expect(accepted.status == 200)
            #expect(try await running.state() != before)
        }
    }

    @Test func gzipBomb_is413_andChangesNothing() async throws {
        // 2 KB of gzip inflating to 4 MB, against a decompression limit of 1 MB.
        let limits = WireLimits(maxDecompressedBytes: 1 << 20)
        let bomb = Gzip.compress(Array(Self.valid.utf8) + [UInt8](repeating: 0x20, count: 4 << 20), level: 9)
        #expect(bomb.count < 16_384)
        try await withHTTPServer(try Self.seededServer(), configuration: .init(limits: limits)) { running in
            let before = try await running.state()
            let response = try await RawHTTP.exchange(port: running.port, headers: ["Content-Encoding": "gzip"], body: bomb)
            #expect(response.status == 413)
            #expect(try JSONValue.parse(Data(response.body))["error"] == .string("gzipTooLarge"))
            #expect(try await running.state() == before)
        }
    }

    /// The bomb inflates against the request limit too, not only the (larger) JSON limit: the
    /// memory one request costs is bounded by the request limit.
    @Test func gzipBomb_isBoundedByTheRequestLimit() async throws {
        let bomb = Gzip.compress(Array(Self.valid.utf8) + [UInt8](repeating: 0x20, count: 4 << 20), level: 9)
        try await withHTTPServer(try Self.seededServer(), configuration: .init(maxRequestBytes: 1 << 20)) { running in
            let before = try await running.state()
            let response = try await RawHTTP.exchange(port: running.port, headers: ["Content-Encoding": "gzip"], body: bomb)
            #expect(response.status == 413)
            #expect(try JSONValue.parse(Data(response.body))["error"] == .string("gzipTooLarge"))
            #expect(try await running.state() == before)
        }
    }

    @Test func unsupportedContentEncoding_is415_andChangesNothing() async throws {
        try await withHTTPServer(try Self.seededServer()) { running in
            let before = try await running.state()
            let response = try await RawHTTP.exchange(port: running.port, headers: ["Content-Encoding": "br"], body: Array(Self.valid.utf8))
            #expect(response.status == 415)
            #expect(try JSONValue.parse(Data(response.body))["error"] == .string("unsupportedEncoding"))
            #expect(try await running.state() == before)
        }
    }

    /// A server at revision 1 holding one list, so "unchanged" compares real rows.
    static func seededServer() async throws -> RevisionServer {
        let schema = try httpTestSchema()
        let server = try RevisionServer(.memory, schema: schema)
        let record = WireRecord(id: -1, present: FieldMask([0]), values: [.text("Seed")])
        _ = try await server.handle(SyncRequest(maxRevision: 0, changeSets: [ChangeSet(entities: [
            EntityChanges(entity: "lists", create: [-1], records: [record]),
        ])]))
        return server
    }
}
