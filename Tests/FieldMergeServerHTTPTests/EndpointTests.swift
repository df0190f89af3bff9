import FieldMerge
import FieldMergeJSON
import FieldMergeServerHTTP
import FieldMergeSync
import FieldMergeProtocol
import FieldMergeServer
import FieldMergeServerSQLite
import Foundation
import Testing

/// Routing, health, content coding and connection trouble, seen at the byte level.
@Suite struct EndpointTests {
    static let catchUp = Array(#"{"maxRevision":0,"changeSets":[]}"#.utf8)
    static let createList = Array(RefusedRequestTests.valid.replacingOccurrences(of: #""maxRevision":1"#, with: #""maxRevision":0"#).utf8)

    @Test func unknownPath_is404() async throws {
        try await withHTTPServer(try RevisionServer(.memory, schema: httpTestSchema())) { running in
            for path in ["/", "/sync/extra", "/Sync", "/health/"] {
                let response = try await RawHTTP.exchange(port: running.port, path: path, body: Self.catchUp)
                #expect(response.status == 404, "\(path)")
                #expect(try JSONValue.parse(Data(response.body))["error"] == .string("notFound"))
            }
        }
    }

    @Test func wrongMethod_is405WithAllow() async throws {
        try await withHTTPServer(try RevisionServer(.memory, schema: httpTestSchema())) { running in
            for method in ["GET", "PUT", "DELETE"] {
                let response = try await RawHTTP.exchange(port: running.port, method: method, path: "/sync")
                #expect(response.status == 405, "\(method) /sync")
                #expect(response.headers["allow"] == "POST")
                #expect(try JSONValue.parse(Data(response.body))["error"] == .string("methodNotAllowed"))
            }
            let post = try await RawHTTP.exchange(port: running.port, method: "POST", path: "/health")
            #expect(post.status == 405)
            #expect(post.headers["allow"] == "GET, HEAD")
            #expect(running.http.maxRevision == 0)
        }
    }

    @Test func health_reportsTheRevision() async throws {
        try await withHTTPServer(try RevisionServer(.memory, schema: httpTestSchema())) { running in
            let fresh = try await RawHTTP.exchange(port: running.port, method: "GET", path: "/health")
            #expect(fresh.status == 200)
            #expect(try JSONValue.parse(Data(fresh.body)) == .object(["status": .string("ok"), "maxRevision": .integer(0)]))

            #expect(try await RawHTTP.exchange(port: running.port, body: Self.createList).status == 200)
            let after = try await RawHTTP.exchange(port: running.port, method: "GET", path: "/health")
            #expect(try JSONValue.parse(Data(after.body))["maxRevision"] == .integer(1))

            let head = try await RawHTTP.exchange(port: running.port, method: "HEAD", path: "/health")
            #expect(head.status == 200)
            #expect(head.body.isEmpty)
        }
    }

    @Test(arguments: [
        ("gzip", true), ("deflate, gzip;q=0.5", true), ("*", true), ("x-gzip", true),
        ("gzip;q=0", false), ("identity", false), ("br", false), ("*, gzip;q=0", false), (nil, false),
    ] as [(String?, Bool)])
    func response_isGzipdExactlyWhenAccepted(_ acceptEncoding: String?, _ gzip: Bool) async throws {
        try await withHTTPServer(try RevisionServer(.memory, schema: httpTestSchema())) { running in
            let headers = acceptEncoding.map { ["Accept-Encoding": $0] } ?? [:]
            let response = try await RawHTTP.exchange(port: running.port, headers: headers, body: Self.createList)
            #expect(response.status == 200)
            #expect(response.headers["content-encoding"] == (gzip ? "gzip" : nil))
            #expect(Array(response.body.prefix(2)) == (gzip ? [0x1F, 0x8B] : [UInt8(ascii: "{"), UInt8(ascii: "\"")]))
            let json = gzip ? try Gzip.decompress(response.body, limit: 1 << 20) : response.body
            // A gzip'd answer says how long it is inflated (what URLSession hands the client).
            #expect(response.headers["fieldmerge-inflated-length"] == (gzip ? String(json.count) : nil))
            let answer = try WireCodec(schema: httpTestSchema()).decodeResponse(json)
            #expect(answer.maxRevision == 1)
            #expect(answer.changeSets.first?.conflict == false)
        }
    }

    @Test func gzipRequestBody_isAccepted() async throws {
        try await withHTTPServer(try RevisionServer(.memory, schema: httpTestSchema())) { running in
            let response = try await RawHTTP.exchange(
                port: running.port, headers: ["Content-Encoding": "gzip"], body: Gzip.compress(Self.createList))
            #expect(response.status == 200)
            #expect(running.http.maxRevision == 1)
            #expect(running.http.statistics.gzipRequests == 1)
        }
    }

    @Test func clientDisconnectingMidBody_leavesServerWorkingAndUnchanged() async throws {
        try await withHTTPServer(try RevisionServer(.memory, schema: httpTestSchema())) { running in
            // Headers promise 1,000 bytes; half a request arrives, then the connection closes.
            let partial = Array(Self.createList.prefix(40))
            let head = "POST /sync HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n"
            for _ in 0..<3 { try await RawHTTP.sendAndClose(port: running.port, Array(head.utf8) + partial) }
            // Headers only, then gone.
            try await RawHTTP.sendAndClose(port: running.port, Array(head.utf8))

            let response = try await RawHTTP.exchange(port: running.port, body: Self.createList)
            #expect(response.status == 200)
            #expect(running.http.maxRevision == 1)
            let lists = try await running.http.withServer { try $0.database.rows("SELECT name FROM lists") }
            #expect(lists == [[.text("Home")]])
            #expect(running.http.statistics.syncs == 1)
        }
    }
}
