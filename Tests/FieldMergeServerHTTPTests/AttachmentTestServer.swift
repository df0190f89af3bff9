import FieldMerge
import FieldMergeProtocol
import FieldMergeServer
import FieldMergeServerHTTP
import FieldMergeServerSQLite
import FieldMergeTestSupport
import Foundation

/// A server with a `photos` entity whose `image` is an attachment, its bytes in a fresh
/// directory, served over HTTP.
enum AttachmentTestServer {
    static func schema() throws -> Schema {
        try Schema([Entity("photos", fields: [Field("caption", .text), Field("image", .attachment)])])
    }

    static func random(_ count: Int) -> [UInt8] {
        var generator = SystemRandomNumberGenerator()
        var bytes = [UInt8](repeating: 0, count: count)
        for index in stride(from: 0, to: count, by: 8) {
            let word = generator.next()
            for offset in 0..<min(8, count - index) { bytes[index + offset] = UInt8(truncatingIfNeeded: word >> (offset * 8)) }
        }
        return bytes
    }

    static func hash(_ bytes: [UInt8]) -> String { SHA256.hex(SHA256.hash(bytes)) }

    /// Runs `body` with the server and the store's directory, removed after. With
    /// `checkReferences` (as `fieldmerge serve` runs) the server refuses a reference to bytes
    /// the store has not finished; without, a record may reference bytes not yet uploaded.
    static func run<T>(
        maxBytes: Int64 = 64 << 20, options: RevisionServer.Options = .init(), checkReferences: Bool = true,
        _ body: (RunningServer, DirectoryAttachmentStore) async throws -> T
    ) async throws -> T {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("attachments-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let store = try DirectoryAttachmentStore(directory: directory)
        var configuration = SyncHTTPServer.Configuration(port: 0)
        configuration.attachments = SyncHTTPServer.Attachments(store: store, maxBytes: maxBytes)
        var options = options
        if checkReferences { options.attachments = store }
        return try await withHTTPServer(try RevisionServer(.memory, schema: schema(), options: options), configuration: configuration) {
            try await body($0, store)
        }
    }

    /// Creates a photo whose image references `bytes` (of media type image/jpeg).
    @discardableResult
    static func reference(_ bytes: [UInt8], in running: RunningServer) async throws -> ChangeSet? {
        try await reference(hash: hash(bytes), size: bytes.count, in: running)
    }

    /// Creates a photo whose image references `hash`; the change set as the server answered it.
    @discardableResult
    static func reference(hash: String, size: Int, in running: RunningServer) async throws -> ChangeSet? {
        let value = Value.text("sha256:\(hash);\(size);image/jpeg")
        return try await running.http.withServer { server in
            try await server.handle(SyncRequest(
                maxRevision: await server.maxRevision, changeSets: [Send.changeSet(Send.create("photos", -1, [.text("a photo"), value]))]))
        }.changeSets.first
    }

    /// The files under the store's directory, relative to it.
    static func files(_ store: DirectoryAttachmentStore) -> [String] {
        let enumerator = FileManager.default.enumerator(atPath: store.directory)
        var files: [String] = []
        while let path = enumerator?.nextObject() as? String {
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: store.directory + "/" + path, isDirectory: &isDirectory), !isDirectory.boolValue {
                files.append(path)
            }
        }
        return files.sorted()
    }
}
