import FieldMerge
import FieldMergeProtocol
import FieldMergeServer
import FieldMergeServerHTTP
import FieldMergeServerSQLite
import Foundation
import Logging
import Synchronization
import Testing

/// Each sync's log line: its request id (echoed as `X-Request-ID`), the same fields as the
/// metrics, and the JSON lines of `--log-format json` (Specs/http.md, "Metrics and logs").
@Suite struct StructuredLogTests {
    /// Lines a ``JSONLogHandler`` wrote.
    final class Lines: Sendable {
        private let lines = Mutex<[[UInt8]]>([])
        func append(_ line: [UInt8]) { lines.withLock { $0.append(line) } }
        var all: [[UInt8]] { lines.withLock { $0 } }

        /// Each line as a JSON object (Foundation's parser, not the writer's own code).
        func objects() throws -> [[String: Any]] {
            try all.map { line in
                #expect(line.last == UInt8(ascii: "\n"))
                #expect(line.dropLast().contains(UInt8(ascii: "\n")) == false)
                return try #require(JSONSerialization.jsonObject(with: Data(line)) as? [String: Any])
            }
        }
    }

    static func request(_ name: String, id: String) throws -> [UInt8] {
        try metricsRequest(maxRevision: 0, [ChangeSet(entities: [EntityChanges(entity: "lists", create: [-1], records: [listRecord(-1, name)])])], request: id)
    }

    @Test func requestID_isEchoedAndLogged() async throws {
        try await withHTTPServer(try RevisionServer(.memory, schema: try httpTestSchema())) { running in
            let given = "trace-4bf92f3577b34da6:a3ce929d0e0e4736"
            let answered = try await RawHTTP.exchange(port: running.port, headers: ["X-Request-ID": given], body: try Self.request("A", id: "1"))
            #expect(answered.status == 200)
            #expect(answered.headers["x-request-id"] == given)
            let line = try #require(running.logs.entries.first { $0.message == "sync" })
            #expect(line.metadata["id"] == .string(given))
            #expect(line.metadata["status"]?.description == "200")
            #expect(line.metadata["outcome"] == .string("ok"))
            #expect(line.metadata["records.applied"]?.description == "1")
            #expect(line.metadata["changeSets.applied"]?.description == "1")
            #expect(line.metadata["conflicts"]?.description == "0")
            #expect(line.metadata["refused"]?.description == "0")
            #expect(line.metadata["catchUp.records"]?.description == "0")
            #expect(line.metadata["duration.ms"] != nil)

            // An id that is not sane (a space, a newline, too long) is replaced by a new one,
            // in the answer and the log alike; so is a missing one, and a refused request has one.
            for hostile in ["has space", "line\r\nX-Evil: 1", String(repeating: "a", count: 129), nil] as [String?] {
                running.logs.clear()
                let headers = hostile.map { ["X-Request-ID": $0.replacingOccurrences(of: "\r\n", with: "%0D%0A")] } ?? [:]
                let refused = try await RawHTTP.exchange(port: running.port, headers: headers, body: Array("{".utf8))
                #expect(refused.status == 400)
                let made = try #require(refused.headers["x-request-id"])
                #expect(made.count == 16 && made.allSatisfy(\.isHexDigit))
                let entry = try #require(running.logs.entries.first { $0.message == "sync refused" })
                #expect(entry.metadata["id"] == .string(made))
                #expect(entry.metadata["status"]?.description == "400")
                #expect(entry.metadata["outcome"] == .string("rejected"))
            }
        }
    }

    /// `--log-format json`'s handler on hostile strings: every line one JSON object that
    /// Foundation's parser reads back to the same strings.
    @Test func jsonLines_escapeHostileStrings() throws {
        let lines = Lines()
        var logger = Logger(label: "fieldmerge.\"http\"") { label in JSONLogHandler(label: label, write: lines.append) }
        logger[metadataKey: "id"] = "abc"
        let hostile = "quote \" backslash \\ newline \n return \r tab \t nul \u{0} bell \u{7} escape \u{1B} del \u{7F} é ✓"
        logger.info("\(hostile)", metadata: [
            "user": .string(hostile),
            "message": .string("shadowed"),
            "count": .stringConvertible(42),
            "replayed": .stringConvertible(true),
            "nested": .dictionary(["a\"b": .array([.string("x\ny"), .stringConvertible(7)])]),
        ])
        logger.debug("below the level")
        let objects = try lines.objects()
        #expect(objects.count == 1)
        let object = try #require(objects.first)
        #expect(object["message"] as? String == hostile)
        #expect(object["user"] as? String == hostile)
        #expect(object["_message"] as? String == "shadowed")
        #expect(object["label"] as? String == "fieldmerge.\"http\"")
        #expect(object["level"] as? String == "info")
        #expect(object["id"] as? String == "abc")
        #expect(object["count"] as? Int == 42)
        #expect(object["replayed"] as? Bool == true)
        let nested = try #require(object["nested"] as? [String: Any])
        let array = try #require(nested["a\"b"] as? [Any])
        #expect(array.first as? String == "x\ny")
        #expect(array.last as? Int == 7)
        let time = try #require(object["time"] as? String)
        #expect(time.count == 24 && time.hasSuffix("Z") && ISO8601DateFormatter.withFractions.date(from: time) != nil)
    }

    /// A server logging through the JSON handler: its sync line parses, with the fields.
    @Test func jsonLines_ofASync_carryTheFields() async throws {
        let lines = Lines()
        let logger = Logger(label: "fieldmerge.http") { label in JSONLogHandler(label: label, write: lines.append) }
        let server = try RevisionServer(.memory, schema: try httpTestSchema())
        try await withHTTPServer(making: { _, onListening in
            SyncHTTPServer(server: server, configuration: .init(port: 0), logger: logger, onListening: onListening)
        }) { running in
            let answered = try await RawHTTP.exchange(
                port: running.port, headers: ["X-Request-ID": "json-1"], body: try Self.request("Line \"one\"\n", id: "1"))
            #expect(answered.status == 200)
        }
        let sync = try #require(try lines.objects().first { $0["message"] as? String == "sync" })
        #expect(sync["id"] as? String == "json-1")
        #expect(sync["status"] as? Int == 200)
        #expect(sync["outcome"] as? String == "ok")
        #expect(sync["records.applied"] as? Int == 1)
        #expect(sync["changeSets.applied"] as? Int == 1)
        #expect(sync["conflicts"] as? Int == 0)
        #expect(sync["refused"] as? Int == 0)
        #expect(sync["catchUp.records"] as? Int == 0)
        #expect(sync["catchUp.bytes"] as? Int == 0)
        #expect(sync["replayed"] as? Bool == false)
        #expect(sync["client"] as? String == "device")
        #expect(sync["duration.ms"] is String)
    }
}

extension ISO8601DateFormatter {
    static var withFractions: ISO8601DateFormatter {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter
    }
}
