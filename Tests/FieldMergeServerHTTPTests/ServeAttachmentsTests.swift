import FieldMerge
import Foundation
import Testing

/// `fieldmerge-server serve --db FILE` with a schema that has an attachment field keeps the
/// bytes in `FILE.attachments/` and refuses what passes `--attachment-max-mib`.
@Suite struct ServeAttachmentsTests {
    @Test func serveKeepsAttachmentsBesideTheDatabase() async throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("fm-attach-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let schema = folder.appendingPathComponent("schema.json")
        try Data(#"{"entities":[{"name":"photos","fields":[{"name":"caption","type":"text"},{"name":"image","type":"attachment"}]}]}"#.utf8)
            .write(to: schema)
        let database = folder.appendingPathComponent("server.sqlite").path
        let serve = try ServeProcess.start(["serve", "--port", "0", "--db", database, "--schema", schema.path, "--attachment-max-mib", "1"])
        guard let port = try await serve.port() else {
            Issue.record("serve did not start: \(serve.errors)")
            _ = try await serve.stop(SIGKILL)
            return
        }
        let bytes = AttachmentTestServer.random(200_000)
        let hash = AttachmentTestServer.hash(bytes)
        let put = try await RawHTTP.exchange(port: port, method: "PUT", path: "/attachments/\(hash)", body: bytes)
        #expect(put.status == 201)
        #expect(FileManager.default.fileExists(atPath: "\(database).attachments/\(hash.prefix(2))/\(hash)"))
        let large = AttachmentTestServer.random((1 << 20) + 1)
        #expect(try await RawHTTP.exchange(port: port, method: "PUT", path: "/attachments/\(AttachmentTestServer.hash(large))", body: large).status == 413)
        _ = try await serve.stop()
    }

    @Test(arguments: [["--attachment-grace-hours", "0"], ["--attachment-sweep-minutes", "-1"], ["--attachment-sweep-minutes", "20000"]])
    func outOfRangeCollectionOptions_areUsageErrors(_ option: [String]) async throws {
        let (status, errors) = try await ServeProcess.run(["serve", "--db", "/tmp/unused.sqlite"] + option)
        #expect(status == 64)
        #expect(errors.contains(option[0]), "\(errors)")
    }
}
