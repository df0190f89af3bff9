import ArgumentParser
import FieldMerge
import FieldMergeCryptoHashing
import FieldMergeSQLite
import FieldMergeSync
import FieldMergeSyncHTTP
#if canImport(FieldMergeSyncNIO)
import FieldMergeSyncNIO
#endif
import FieldMergeToolCommands
import FieldMergeToolSupport
import Foundation

/// `fieldmerge bench attachments --server URL` (Specs/benchmarks.md, "Attachments"): one
/// device attaches a file of random bytes and syncs it up through a `fieldmerge serve`,
/// another syncs the record and opens the attachment (downloaded and checked). The server
/// must serve `photos` (`caption` text, `image` attachment); `Scripts/bench-attachments`
/// starts one and runs `curl` on the same sizes beside this.
struct AttachmentBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "attachments",
        abstract: "The device's attachment transfers over HTTP: attach, upload and download (checked) of one file, with this process's peak RSS."
    )

    @Option(help: ArgumentHelp("The `fieldmerge serve` to sync with (its schema: photos with caption text and image attachment).", valueName: "url"))
    var server: String
    @Option(help: "The file's size in MiB.") var mib = 1_024
    @Option(help: "How the devices hash attachments: crypto (swift-crypto) or portable (the core's plain Swift).") var hashing = "crypto"
    @Option(help: "The bytes of one upload request, in MiB (HTTPTransport's default when omitted).") var uploadPieceMib: Int?
    @Option(help: "The bytes of one download request, in MiB (HTTPTransport's default when omitted).") var downloadPieceMib: Int?
    @Option(help: "The devices' attachment transport: urlsession (HTTPTransport, pieces) or nio (NIOAttachmentTransport, one streamed request; Server trait).")
    var transport = "urlsession"

    static let schema = try! Schema([Entity("photos", fields: [Field("caption", .text), Field("image", .attachment)])])

    func validate() throws {
        guard (1...(64 << 10)).contains(mib) else { throw ValidationError("--mib: 1 to 65,536") }
        guard (try? Self.hashing(hashing)) != nil else { throw ValidationError("--hashing: crypto or portable") }
        for piece in [uploadPieceMib, downloadPieceMib].compactMap({ $0 }) where !(1...1_024).contains(piece) {
            throw ValidationError("--upload-piece-mib, --download-piece-mib: 1 to 1,024")
        }
        guard Self.transports.contains(transport) else { throw ValidationError("--transport: \(Self.transports.joined(separator: " or "))") }
    }

    #if canImport(FieldMergeSyncNIO)
    static let transports = ["urlsession", "nio"]
    #else
    static let transports = ["urlsession"]
    #endif

    static func hashing(_ name: String) throws -> AttachmentHashing {
        switch name {
        case "portable": return .portable
        #if canImport(Crypto)
        case "crypto": return .crypto
        #endif
        default: throw ValidationError("--hashing: crypto (with the Server trait) or portable")
        }
    }

    /// A device's client: its store in `path`, hashing with `--hashing`.
    func device(_ path: String, _ url: URL) throws -> SyncClient {
        var generator = SystemRandomNumberGenerator()
        let store = try Store(.file(path: path), schema: Self.schema, replica: ReplicaID(generator.next() >> 1))
        store.attachmentHashing = try Self.hashing(hashing)
        var configuration = HTTPTransport.Configuration()
        if let uploadPieceMib { configuration.attachmentPieceBytes = uploadPieceMib << 20 }
        if let downloadPieceMib { configuration.attachmentDownloadPieceBytes = downloadPieceMib << 20 }
        let http = HTTPTransport(url: url, configuration: configuration)
        #if canImport(FieldMergeSyncNIO)
        if transport == "nio" { return SyncClient(store: store, transport: try NIOAttachmentTransport(http)) }
        #endif
        return SyncClient(store: store, transport: http)
    }

    func run() async throws {
        ProcessMemory.limit()
        let url = try remoteSyncURL(server)
        let folder = NSTemporaryDirectory() + "fieldmerge-attachment-bench-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let size = Int64(mib) << 20
        try Self.writeRandomFile(folder + "/file.bin", size: size)

        // The device that attaches and uploads.
        let uploader = try device(folder + "/up.sqlite", url)
        let file = folder + "/file.bin"
        let (reference, attachSeconds) = try await Self.timed {
            try await uploader.write { store in
                let id = try store.untyped.insert("photos", values: [.text("bench"), .null])
                return try store.attach(contentsOf: file, mediaType: "application/octet-stream", to: "photos", id: id, field: "image")
            }
        }
        print(step: "attachment-attach", bytes: size, seconds: attachSeconds)
        let (summary, uploadSeconds) = try await Self.timed { try await uploader.sync() }
        guard summary.attachmentBytesUploaded == size, summary.attachmentFailures.isEmpty else {
            throw ValidationError("the upload sent \(summary.attachmentBytesUploaded) of \(size) bytes: \(summary.attachmentFailures)")
        }
        print(step: "attachment-upload", bytes: size, seconds: uploadSeconds)
        await uploader.close()
        // The file and the uploader's copy are done with. Removed before the download, as
        // Scripts/bench-attachments removes `curl`'s files before this process runs: on this
        // VM, writing into memory the page cache just gave back is about twice as fast as
        // into memory it takes anew after gigabytes of writes (Specs/benchmarks.md), and the
        // download must not pay for what `curl`'s did not.
        for name in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [] {
            try? FileManager.default.removeItem(atPath: folder + "/" + name)
        }

        // The device that receives the record and opens the attachment.
        let downloader = try device(folder + "/down.sqlite", url)
        _ = try await downloader.sync()
        let (path, downloadSeconds) = try await Self.timed { try await downloader.attachment(reference, entity: "photos") }
        guard (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)??.int64Value == size else {
            throw ValidationError("the downloaded file at \(path) does not have \(size) bytes")
        }
        print(step: "attachment-download", bytes: size, seconds: downloadSeconds)
        await downloader.close()
    }

    /// `body`'s result and its wall time in seconds.
    /// Each step starts with the dirty pages of the one before written out (`sync`), as
    /// `Scripts/bench-attachments` does before each of `curl`'s: no step pays for the
    /// writeback of another.
    static func timed<T>(_ body: () async throws -> T) async throws -> (T, Double) {
        sync()
        let start = ContinuousClock.now
        let value = try await body()
        let elapsed = ContinuousClock.now - start
        return (value, Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
    }

    /// One JSON line: the step's time and rate (and, as every bench line, this process's
    /// peak RSS so far).
    func print(step: String, bytes: Int64, seconds: Double) {
        var line = BenchLine(step: step, records: 1, seconds: seconds, runs: 1, ops: Int(bytes), opUnit: "bytes")
        line.add("mb_per_s", Double(bytes) / 1e6 / seconds)
        line.extra.append(("hashing", "\"\(hashing)\""))
        line.extra.append(("transport", "\"\(transport)\""))
        Swift.print(line.render())
    }

    /// `size` bytes of xorshift noise, written 1 MiB at a time.
    static func writeRandomFile(_ path: String, size: Int64) throws {
        guard FileManager.default.createFile(atPath: path, contents: nil) else { throw ValidationError("cannot create \(path)") }
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        defer { try? handle.close() }
        var generator = SystemRandomNumberGenerator()
        var state = generator.next() | 1
        var chunk = [UInt64](repeating: 0, count: 1 << 17)
        var left = size
        while left > 0 {
            for index in chunk.indices {
                state ^= state << 13
                state ^= state >> 7
                state ^= state << 17
                chunk[index] = state
            }
            let count = Int(min(left, 1 << 20))
            try chunk.withUnsafeBytes { try handle.write(contentsOf: Data($0.prefix(count))) }
            left -= Int64(count)
        }
    }
}
