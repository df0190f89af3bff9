import FieldMergeJSON
import FieldMergeServer
import FieldMergeServerHTTP
import FieldMergeServerSQLite
import Foundation
import Testing

/// Requests that are not valid HTTP/1.1, refused by NIO's parser before any route sees
/// them, are answered 400 with the JSON error body, `invalidHTTP` (Specs/http.md §1).
@Suite struct InvalidHTTPTests {
    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var head: String
        var testDescription: String { name }
    }

    static let cases: [Case] = [
        Case(name: "a header of 100 KB (limit 80 KiB)", head: "X-Big: \(String(repeating: "a", count: 100_000))\r\n"),
        Case(name: "10,000 headers (limit 1,000)", head: (0..<10_000).map { "X-H\($0): 1\r\n" }.joined()),
        Case(name: "two different Content-Length", head: "Content-Length: 2\r\nContent-Length: 3\r\n"),
        Case(name: "Content-Length and chunked", head: "Content-Length: 2\r\nTransfer-Encoding: chunked\r\n"),
        Case(name: "a header without a colon", head: "no colon here\r\n"),
    ]

    @Test(arguments: cases)
    func invalidRequest_is400WithTheJSONErrorBody(_ invalid: Case) async throws {
        try await withHTTPServer(try RevisionServer(.memory, schema: httpTestSchema())) { running in
            let raw = "POST /sync HTTP/1.1\r\nHost: 127.0.0.1\r\n" + invalid.head + "\r\n{}"
            let response = try await RawHTTP.exchange(port: running.port, raw: Array(raw.utf8))
            #expect(response.status == 400)
            #expect(response.headers["content-type"] == "application/json")
            #expect(response.headers["connection"] == "close")
            let body = try JSONValue.parse(Data(response.body))
            #expect(body["error"] == .string("invalidHTTP"))
            if case .string(let message)? = body["message"] { #expect(message.contains("HTTP/1.1")) } else { Issue.record("no message in \(body)") }
            #expect(running.http.statistics.syncs == 0)
        }
    }
}
