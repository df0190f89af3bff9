import FieldMerge
import FieldMergeJSON
import FieldMergeProtocol
import FieldMergeServer
import FieldMergeServerSQLite
import FieldMergeTestSupport
import Foundation
import Testing

/// `PUT`, `HEAD` and `GET /attachments/<sha256>` (Specs/attachments.md).
@Suite struct AttachmentEndpointTests {
    typealias Fixture = AttachmentTestServer

    func put(_ running: RunningServer, _ hash: String, _ body: [UInt8], headers: [String: String] = [:]) async throws -> RawHTTP.Response {
        try await RawHTTP.exchange(port: running.port, method: "PUT", path: "/attachments/\(hash)", headers: headers, body: body)
    }

    func error(_ response: RawHTTP.Response) throws -> JSONValue? { try JSONValue.parse(Data(response.body))["error"] }

    @Test func putThenGet_returnsTheSameBytes() async throws {
        try await Fixture.run { running, store in
            let bytes = Fixture.random(3 << 20 + 12_345)
            let hash = Fixture.hash(bytes)
            let put = try await put(running, hash, bytes)
            #expect(put.status == 201)
            #expect(put.headers["upload-offset"] == String(bytes.count))
            #expect(try JSONValue.parse(Data(put.body))["complete"] == .bool(true))
            #expect(Fixture.files(store) == ["\(hash.prefix(2))/\(hash)"])
            try await Fixture.reference(bytes, in: running)
            let get = try await RawHTTP.exchange(port: running.port, method: "GET", path: "/attachments/\(hash)")
            #expect(get.status == 200)
            #expect(get.headers["content-length"] == String(bytes.count))
            #expect(get.body.count == bytes.count)
            #expect(get.body == bytes)
            let head = try await RawHTTP.exchange(port: running.port, method: "HEAD", path: "/attachments/\(hash)")
            #expect(head.status == 200 && head.headers["upload-complete"] == "?1" && head.headers["upload-offset"] == String(bytes.count))
        }
    }

    @Test func anUploadEndingHalfWay_resumesAtTheOffset() async throws {
        // Records may reference bytes not uploaded (as on a server without the check).
        try await Fixture.run(checkReferences: false) { running, store in
            let bytes = Fixture.random(1 << 20)
            let hash = Fixture.hash(bytes)
            let half = bytes.count / 2
            let first = try await put(running, hash, Array(bytes[..<half]), headers: ["Upload-Length": String(bytes.count)])
            #expect(first.status == 200)
            #expect(first.headers["upload-offset"] == String(half) && first.headers["upload-complete"] == "?0")
            let head = try await RawHTTP.exchange(port: running.port, method: "HEAD", path: "/attachments/\(hash)")
            #expect(head.status == 200 && head.headers["upload-offset"] == String(half) && head.headers["upload-complete"] == "?0")
            // Not readable while partial.
            try await Fixture.reference(bytes, in: running)
            #expect(try await RawHTTP.exchange(port: running.port, method: "GET", path: "/attachments/\(hash)").status == 404)
            #expect(Fixture.files(store) == ["partial/\(hash)"])
            let rest = try await put(
                running, hash, Array(bytes[half...]), headers: ["Upload-Offset": String(half), "Upload-Length": String(bytes.count)])
            #expect(rest.status == 201)
            #expect(Fixture.files(store) == ["\(hash.prefix(2))/\(hash)"])
            #expect(try await RawHTTP.exchange(port: running.port, method: "GET", path: "/attachments/\(hash)").body == bytes)
        }
    }

    @Test func aConnectionCutHalfWay_keepsWhatArrived_andTheUploadResumes() async throws {
        try await Fixture.run { running, store in
            let bytes = Fixture.random(2 << 20)
            let hash = Fixture.hash(bytes)
            let head = "PUT /attachments/\(hash) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: \(bytes.count)\r\n\r\n"
            try await RawHTTP.sendAndClose(port: running.port, Array(head.utf8) + bytes[..<(bytes.count / 2)])
            // The server notices the cut when it reads next: ask until the upload is free.
            var resumed: RawHTTP.Response?
            for _ in 0..<100 {
                let status = try await RawHTTP.exchange(port: running.port, method: "HEAD", path: "/attachments/\(hash)")
                let held = Int(status.headers["upload-offset"] ?? "0") ?? 0
                let response = try await put(
                    running, hash, Array(bytes[held...]), headers: ["Upload-Offset": String(held), "Upload-Length": String(bytes.count)])
                if response.status == 409 {
                    try await Task.sleep(for: .milliseconds(50))
                    continue
                }
                #expect(held > 0 && held <= bytes.count / 2)
                resumed = response
                break
            }
            #expect(resumed?.status == 201)
            try await Fixture.reference(bytes, in: running)
            #expect(try await RawHTTP.exchange(port: running.port, method: "GET", path: "/attachments/\(hash)").body == bytes)
            #expect(Fixture.files(store) == ["\(hash.prefix(2))/\(hash)"])
        }
    }

    @Test func aWrongOffset_is409WithTheHeldOffset() async throws {
        try await Fixture.run { running, _ in
            let bytes = Fixture.random(10_000)
            let hash = Fixture.hash(bytes)
            #expect(try await put(running, hash, Array(bytes[..<4_000]), headers: ["Upload-Length": "10000"]).status == 200)
            for offset in ["0", "3999", "4001"] {
                let wrong = try await put(running, hash, Array(bytes[4_000..<5_000]), headers: ["Upload-Offset": offset, "Upload-Length": "10000"])
                #expect(wrong.status == 409, "offset \(offset)")
                #expect(wrong.headers["upload-offset"] == "4000")
                #expect(try error(wrong) == .string("offsetMismatch"))
            }
            let right = try await put(running, hash, Array(bytes[4_000...]), headers: ["Upload-Offset": "4000", "Upload-Length": "10000"])
            #expect(right.status == 201)
        }
    }

    @Test func aBodyNotMatchingItsHash_isRefused_andNothingIsKept() async throws {
        // Records may reference bytes not uploaded (as on a server without the check).
        try await Fixture.run(checkReferences: false) { running, store in
            let bytes = Fixture.random(300_000)
            let claimed = Fixture.hash(Fixture.random(16))
            try await Fixture.reference(hash: claimed, size: bytes.count, in: running)
            let put = try await put(running, claimed, bytes)
            #expect(put.status == 422)
            #expect(try error(put) == .string("hashMismatch"))
            guard case .string(let message)? = try JSONValue.parse(Data(put.body))["message"] else { Issue.record("no message"); return }
            #expect(message.contains(Fixture.hash(bytes)))
            #expect(Fixture.files(store).isEmpty)
            #expect(try await RawHTTP.exchange(port: running.port, method: "GET", path: "/attachments/\(claimed)").status == 404)
            #expect(try await RawHTTP.exchange(port: running.port, method: "HEAD", path: "/attachments/\(claimed)").status == 404)
        }
    }

    @Test func theSameHashTwice_theSecondIsANoOp() async throws {
        try await Fixture.run { running, store in
            let bytes = Fixture.random(100_000)
            let hash = Fixture.hash(bytes)
            #expect(try await put(running, hash, bytes).status == 201)
            let path = "\(store.directory)/\(hash.prefix(2))/\(hash)"
            let before = try FileManager.default.attributesOfItem(atPath: path)
            let again = try await put(running, hash, bytes)
            #expect(again.status == 200)
            #expect(try JSONValue.parse(Data(again.body))["complete"] == .bool(true))
            #expect(again.headers["upload-offset"] == String(bytes.count))
            let after = try FileManager.default.attributesOfItem(atPath: path)
            #expect(before[.systemFileNumber] as? Int == after[.systemFileNumber] as? Int)
            #expect(before[.modificationDate] as? Date == after[.modificationDate] as? Date)
            #expect(Fixture.files(store) == ["\(hash.prefix(2))/\(hash)"])
            // Another size for held bytes is a mistake of the client's.
            let wrongSize = try await put(running, hash, bytes + [0])
            #expect(wrongSize.status == 409)
            #expect(try error(wrongSize) == .string("sizeMismatch"))
        }
    }

    @Test func aRange_is206WithThoseBytes_andPastTheEnd416() async throws {
        try await Fixture.run { running, _ in
            let bytes = Fixture.random(700_000)
            let hash = Fixture.hash(bytes)
            #expect(try await put(running, hash, bytes).status == 201)
            try await Fixture.reference(bytes, in: running)
            for (header, range) in [
                ("bytes=0-0", 0..<1), ("bytes=100-299999", 100..<300_000), ("bytes=699000-", 699_000..<700_000),
                ("bytes=-10", 699_990..<700_000), ("bytes=690000-9999999", 690_000..<700_000),
            ] {
                let get = try await RawHTTP.exchange(port: running.port, method: "GET", path: "/attachments/\(hash)", headers: ["Range": header])
                #expect(get.status == 206, "\(header)")
                #expect(get.headers["content-range"] == "bytes \(range.lowerBound)-\(range.upperBound - 1)/700000", "\(header)")
                #expect(get.body == Array(bytes[range]), "\(header)")
            }
            for header in ["bytes=700000-", "bytes=800000-800010", "bytes=-0"] {
                let past = try await RawHTTP.exchange(port: running.port, method: "GET", path: "/attachments/\(hash)", headers: ["Range": header])
                #expect(past.status == 416, "\(header)")
                #expect(past.headers["content-range"] == "bytes */700000")
                #expect(try error(past) == .string("rangeNotSatisfiable"))
            }
            // Ranges the server does not honour: the whole attachment.
            let several = try await RawHTTP.exchange(port: running.port, method: "GET", path: "/attachments/\(hash)", headers: ["Range": "bytes=0-1,5-6"])
            #expect(several.status == 200 && several.body == bytes)
        }
    }

    @Test(arguments: ["../x", "..%2Fx", String(repeating: "A", count: 64), String(repeating: "a", count: 63), String(repeating: "a", count: 65), "", "abc/def"])
    func aHostileHash_is400_andNoFileIsMade(_ name: String) async throws {
        try await Fixture.run { running, store in
            for method in ["PUT", "GET", "HEAD"] {
                let response = try await RawHTTP.exchange(
                    port: running.port, method: method, path: "/attachments/\(name)", body: method == "PUT" ? [1, 2, 3] : [])
                if name.isEmpty {
                    #expect(response.status == 404, "\(method) /attachments/")
                } else {
                    #expect(response.status == 400, "\(method) \(name)")
                    if method != "HEAD" { #expect(try error(response) == .string("invalidHash")) }
                }
            }
            #expect(Fixture.files(store).isEmpty)
        }
    }

    @Test func aDownloadOfAnUnreferencedHash_isRefused() async throws {
        // Records may reference bytes not uploaded (as on a server without the check).
        try await Fixture.run(checkReferences: false) { running, _ in
            let bytes = Fixture.random(1_000)
            let hash = Fixture.hash(bytes)
            #expect(try await put(running, hash, bytes).status == 201)
            let refused = try await RawHTTP.exchange(port: running.port, method: "GET", path: "/attachments/\(hash)")
            #expect(refused.status == 403)
            #expect(try error(refused) == .string("forbidden"))
            // A record that references other bytes of the same size grants nothing.
            try await Fixture.reference(hash: Fixture.hash(Fixture.random(1_000)), size: 1_000, in: running)
            #expect(try await RawHTTP.exchange(port: running.port, method: "GET", path: "/attachments/\(hash)").status == 403)
            try await Fixture.reference(bytes, in: running)
            #expect(try await RawHTTP.exchange(port: running.port, method: "GET", path: "/attachments/\(hash)").status == 200)
        }
    }

    @Test func aDownloadOfAnEntityTheUserMayNotRead_isRefused() async throws {
        var options = RevisionServer.Options()
        options.readable = { _, entity in entity != "photos" }
        try await Fixture.run(options: options) { running, _ in
            let bytes = Fixture.random(1_000)
            let hash = Fixture.hash(bytes)
            #expect(try await put(running, hash, bytes).status == 201)
            try await Fixture.reference(bytes, in: running)
            #expect(try await RawHTTP.exchange(port: running.port, method: "GET", path: "/attachments/\(hash)").status == 403)
        }
    }

    @Test func aReferenceToBytesNotUploaded_isRefusedAlone_andTakenOnceTheyAre() async throws {
        try await Fixture.run { running, _ in
            let bytes = Fixture.random(5_000)
            let hash = Fixture.hash(bytes)
            let reference = Value.text("sha256:\(hash);5000;image/png")
            let sent = SyncRequest(
                maxRevision: 0,
                changeSets: [Send.changeSet(Send.create("photos", -1, [.text("waits"), reference]), Send.create("photos", -2, [.text("no photo"), .null]))])
            let answer = try await running.http.withServer { try await $0.handle(sent) }
            let refused = try #require(answer.changeSets.first?.refused)
            #expect(refused.map(\.id) == [-1])
            #expect(refused.first?.code == "attachmentMissing")
            #expect(refused.first?.message.contains("PUT /attachments/\(hash)") == true)
            // The other record of the change set is taken.
            #expect(answer.changeSets.first?.entities.first?.create.count == 1)
            #expect(answer.maxRevision == 1)
            // A partial upload is not enough.
            #expect(try await put(running, hash, Array(bytes[..<100]), headers: ["Upload-Length": "5000"]).status == 200)
            #expect(try await Fixture.reference(bytes, in: running)?.refused.first?.code == "attachmentMissing")
            #expect(try await put(running, hash, Array(bytes[100...]), headers: ["Upload-Offset": "100", "Upload-Length": "5000"]).status == 201)
            let taken = try await Fixture.reference(bytes, in: running)
            #expect(taken?.refused.isEmpty == true && taken?.conflict != true)
            #expect(taken?.entities.first?.create.count == 1)
            #expect(try await RawHTTP.exchange(port: running.port, method: "GET", path: "/attachments/\(hash)").body == bytes)
        }
    }

    @Test func anOversizedUpload_isRefusedBeforeItsBytes() async throws {
        try await Fixture.run(maxBytes: 50_000) { running, store in
            let bytes = Fixture.random(50_001)
            let hash = Fixture.hash(bytes)
            let whole = try await put(running, hash, bytes)
            #expect(whole.status == 413)
            #expect(try error(whole) == .string("tooLarge"))
            let declared = try await put(running, hash, Array(bytes[..<10]), headers: ["Upload-Length": "50001"])
            #expect(declared.status == 413)
            // A body longer than the length it declares.
            let longer = try await put(running, hash, Array(bytes[..<20]), headers: ["Upload-Length": "10"])
            #expect(longer.status == 400)
            #expect(Fixture.files(store).isEmpty)
            #expect(try await put(running, Fixture.hash(Array(bytes[..<50_000])), Array(bytes[..<50_000])).status == 201)
        }
    }

    @Test func otherMethods_are405_andWithoutAStore404() async throws {
        try await Fixture.run { running, _ in
            let hash = String(repeating: "a", count: 64)
            let delete = try await RawHTTP.exchange(port: running.port, method: "DELETE", path: "/attachments/\(hash)")
            #expect(delete.status == 405 && delete.headers["allow"] == "GET, HEAD, PUT")
        }
        try await withHTTPServer(try RevisionServer(.memory, schema: Fixture.schema())) { running in
            let get = try await RawHTTP.exchange(port: running.port, method: "GET", path: "/attachments/\(String(repeating: "a", count: 64))")
            #expect(get.status == 404)
        }
    }
}
