import FieldMerge
import FieldMergeProtocol
import FieldMergeSQLite
import FieldMergeServer
import FieldMergeServerSQLite
@testable import FieldMergeSync
import Foundation
import Synchronization
import FieldMergeFiles

/// A server whose byte store is a fresh directory, and devices syncing with it in this
/// process through counting transports (Specs/attachments.md, "The device").
final class AttachmentWorld: Sendable {
    static let schema = try! Schema([Entity("photos", fields: [Field("caption", .text), Field("image", .attachment)])])

    let directory: String
    let bytes: DirectoryAttachmentStore
    let server: RevisionServer

    init(readable: RevisionServer.ReadFilter? = nil) throws {
        directory = NSTemporaryDirectory() + "fieldmerge-attachments-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        bytes = try DirectoryAttachmentStore(directory: directory + "/server")
        var options = RevisionServer.Options()
        options.attachments = bytes
        options.readable = readable
        server = try RevisionServer(.memory, schema: Self.schema, options: options)
    }

    deinit { try? FileManager.default.removeItem(atPath: directory) }

    /// A transport of `identity` that counts what it carries.
    func transport(_ identity: SyncIdentity? = nil) -> CountingTransport {
        CountingTransport(InProcessTransport(server: server, identity: identity))
    }

    /// A device with an in-memory store, over `transport`.
    func device(_ replica: UInt64, _ transport: any SyncTransport) throws -> SyncClient {
        SyncClient(store: try Store(.memory, schema: Self.schema, replica: ReplicaID(replica)), transport: transport)
    }

    /// A device whose store is the file `name` of the world's directory.
    func device(file name: String, _ replica: UInt64, _ transport: any SyncTransport) throws -> SyncClient {
        SyncClient(store: try Store(.file(path: "\(directory)/\(name)"), schema: Self.schema, replica: ReplicaID(replica)), transport: transport)
    }

    /// Creates a photo on `client` and attaches `bytes` to it.
    func photo(_ client: SyncClient, _ bytes: [UInt8], caption: String = "a photo") async throws -> AttachmentReference {
        try await client.write { store in
            let id = try store.untyped.insert("photos", values: [.text(caption), .null])
            return try store.attach(bytes, mediaType: "image/jpeg", to: "photos", id: id, field: "image")
        }
    }

    /// What the server holds of `reference`.
    func held(_ reference: AttachmentReference) async throws -> AttachmentHeld { try await bytes.held(reference.sha256) }

    /// The references the server's photos hold.
    func serverReferences() async throws -> [String] {
        try await server.withSQLite { database in
            try database.rows("SELECT \"image\" FROM \"photos\" ORDER BY id").compactMap { row -> String? in
                if case .text(let text)? = row.first { return text } else { return nil }
            }
        } ?? []
    }

    static func random(_ count: Int, seed: UInt64) -> [UInt8] {
        var state = seed &* 0x9E37_79B9_7F4A_7C15 | 1
        return (0..<count).map { _ in
            state ^= state << 13
            state ^= state >> 7
            state ^= state << 17
            return UInt8(truncatingIfNeeded: state)
        }
    }
}

/// Carries everything to an `InProcessTransport`, counting attachment calls, and fails
/// them on demand (the network gone).
final class CountingTransport: SyncTransport, AttachmentTransport {
    struct Counts: Sendable {
        var heads = 0
        var uploads = 0
        var uploadOffsets: [Int64] = []
        var downloads = 0
        /// Downloads under way now, and the most at once so far.
        var downloading = 0
        var mostDownloading = 0
    }

    let inner: InProcessTransport
    let counts = Mutex(Counts())
    let offline = Mutex(false)
    /// Downloads arrive with a byte flipped.
    let damaging = Mutex(false)
    /// How long each download waits before it begins (a slow network's round trip).
    let downloadDelay = Mutex(Duration.zero)

    init(_ inner: InProcessTransport) { self.inner = inner }

    var snapshot: Counts { counts.withLock { $0 } }

    func setOffline(_ value: Bool) { offline.withLock { $0 = value } }

    private func checkOnline() throws {
        if offline.withLock({ $0 }) { throw TransportError("offline (test)") }
    }

    func send(_ body: [UInt8], gzip: Bool) async throws -> [UInt8] {
        try checkOnline()
        return try await inner.send(body, gzip: gzip)
    }

    func attachmentHeld(_ sha256: String) async throws -> AttachmentHolding {
        try checkOnline()
        counts.withLock { $0.heads += 1 }
        return try await inner.attachmentHeld(sha256)
    }

    func uploadAttachment(
        _ sha256: String, size: Int64, from path: String, offset: Int64, progress: (@Sendable (Int64) -> Void)?
    ) async throws -> AttachmentHolding {
        try checkOnline()
        counts.withLock {
            $0.uploads += 1
            $0.uploadOffsets.append(offset)
        }
        return try await inner.uploadAttachment(sha256, size: size, from: path, offset: offset, progress: progress)
    }

    func downloadAttachment(
        _ sha256: String, range: Range<Int64>?, to path: String, progress: (@Sendable (Int64) -> Void)?
    ) async throws {
        try checkOnline()
        counts.withLock {
            $0.downloads += 1
            $0.downloading += 1
            $0.mostDownloading = max($0.mostDownloading, $0.downloading)
        }
        defer { counts.withLock { $0.downloading -= 1 } }
        let delay = downloadDelay.withLock { $0 }
        if delay > .zero { try await Task.sleep(for: delay) }
        guard damaging.withLock({ $0 }) else { return try await inner.downloadAttachment(sha256, range: range, to: path, progress: progress) }
        // A byte damaged on the way: flipped in the file before any progress is heard.
        let before = (try? AttachmentFiles.size(of: path)) ?? 0
        try await inner.downloadAttachment(sha256, range: range, to: path, progress: nil)
        let handle = try FileHandle(forUpdating: URL(fileURLWithPath: path))
        try handle.seek(toOffset: UInt64(before ?? 0))
        let byte = try handle.read(upToCount: 1) ?? Data([0])
        try handle.seek(toOffset: UInt64(before ?? 0))
        try handle.write(contentsOf: Data([byte[byte.startIndex] ^ 0xFF]))
        try handle.close()
        progress?(((try? AttachmentFiles.size(of: path)) ?? 0).map { $0 - (before ?? 0) } ?? 0)
    }
}

/// Carries sync requests only: no attachments.
struct RecordsOnlyTransport: SyncTransport {
    let inner: InProcessTransport
    func send(_ body: [UInt8], gzip: Bool) async throws -> [UInt8] { try await inner.send(body, gzip: gzip) }
}
