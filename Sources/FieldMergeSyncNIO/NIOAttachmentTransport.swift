import FieldMergeFiles
import FieldMergeProtocol
import FieldMergeSyncHTTP
import Foundation
import NIOCore
import NIOHTTP1
import NIOPosix

/// A transport for Linux processes that moves the bytes of attachments over SwiftNIO:
/// `POST /sync` goes through the `HTTPTransport` it wraps, `HEAD`, `PUT` and `GET` of
/// `…/attachments/<sha256>` (Specs/attachments.md §4) over connections of its own.
///
/// Why: on Linux, URLSession (FoundationNetworking, on libcurl) moves each chunk of a body
/// across several threads; `HTTPTransport`'s uploads reach about 0.6 of `curl`'s rate over
/// loopback whatever the piece size (Specs/benchmarks.md, "Attachments"). This transport
/// streams a file to the socket as the socket takes it and a response body to the file as
/// the file takes it, with no piece size to tune:
///
/// - An upload is one `PUT` of the file from `offset` to its end (`Upload-Offset`,
///   `Upload-Length`, `Content-Length` the bytes left), read in chunks of `chunkBytes` on
///   NIO's blocking-I/O thread pool while the previous chunk goes out; the next chunk is read
///   only when the connection is writable again, so memory holds a few chunks at most. Its
///   progress hears the bytes handed to the connection as they go, then what the server
///   holds once it answered. A connection that drops throws `TransportError`: the server
///   keeps what arrived and the client resumes from it (`attachmentHeld`).
/// - A download is one `GET` (with `Range` for a range). Each piece the socket gives (up to
///   256 KiB) is appended to the file on the connection's event loop and then handed to the
///   caller (who hashes it, see `AttachmentTransport`) on the same thread, while it is still
///   in that core's cache: no copy, no hop between threads, no read back. The socket is read
///   again only once the piece is in the file, so a 1 GiB download holds a few pieces.
///   Because those writes run on event loops, downloads use loops of their own by default
///   (``transferLoops``): a write that waits for the disk delays other transfers only.
///
/// The wire, the token and the errors are `HTTPTransport`'s: the same URL, headers and bearer
/// token (one retry with a refreshed token after a 401); `TransportError` for the network, a
/// 5xx, 408 or 429 and for no byte either way for `requestTimeout`; `SyncRequestRejected`
/// with the server's code for any other status, 501 included (see `AttachmentTransport`).
/// Plain HTTP only (loopback, a sidecar, inside a data centre), like ``NIOLiveChannel``.
public struct NIOAttachmentTransport: SyncTransport, AttachmentTransport {
    /// A URL the transport cannot use: not `http://host[:port]/…`.
    public struct UnsupportedURL: Error, CustomStringConvertible {
        public let url: URL
        public var description: String {
            "NIOAttachmentTransport speaks plain HTTP to a host: '\(url.absoluteString)' is not an http:// URL with a host (use HTTPTransport for https)"
        }
    }

    /// The transport `send` goes through; its URL, configuration and token serve the
    /// attachments too.
    public let http: HTTPTransport
    /// The bytes of a file read at a time for an upload.
    public let chunkBytes: Int
    let exchange: AttachmentExchange
    let files: AttachmentFileIO
    let host: String

    /// - Parameters:
    ///   - http: The sync transport: its URL (`…/sync`, plain `http://`), headers,
    ///     `requestTimeout` and token serve the attachments as well.
    ///   - chunkBytes: The bytes an upload reads from its file at a time (1 MiB).
    ///   - group: The event loops that carry the connections and write downloads into their
    ///     files; by default ``transferLoops``.
    ///   - threadPool: Where uploads read their files; by default NIO's shared pool.
    /// - Throws: ``UnsupportedURL`` for a URL that is not `http://` with a host.
    public init(
        _ http: HTTPTransport, chunkBytes: Int = 1 << 20, group: any EventLoopGroup = NIOAttachmentTransport.transferLoops,
        threadPool: NIOThreadPool = .singleton
    ) throws(UnsupportedURL) {
        let url = http.url
        guard url.scheme?.lowercased() == "http", let host = url.host, !host.isEmpty else { throw UnsupportedURL(url: url) }
        self.http = http
        self.chunkBytes = max(4 << 10, chunkBytes)
        self.host = url.port.map { "\(host):\($0)" } ?? host
        let timeout = TimeAmount.nanoseconds(Int64(min(max(http.configuration.requestTimeout, 0.001), 1e9) * 1e9))
        exchange = AttachmentExchange(host: host, port: url.port ?? 80, group: group, timeout: timeout, origin: url.absoluteString)
        files = AttachmentFileIO(pool: threadPool)
    }

    /// The event loops of attachment transfers unless a transport is given others: one per
    /// core, for the life of the process, apart from the shared
    /// `MultiThreadedEventLoopGroup.singleton` because downloads write files on them.
    public static let transferLoops: MultiThreadedEventLoopGroup = MultiThreadedEventLoopGroup(numberOfThreads: System.coreCount)

    /// An `HTTPTransport` of `url`, `configuration` and `token`, with attachments over NIO.
    public init(
        url: URL, configuration: HTTPTransport.Configuration = .init(), token: HTTPTransport.TokenProvider? = nil,
        chunkBytes: Int = 1 << 20
    ) throws(UnsupportedURL) {
        try self.init(HTTPTransport(url: url, configuration: configuration, token: token), chunkBytes: chunkBytes)
    }

    public func send(_ body: [UInt8], gzip: Bool) async throws -> [UInt8] {
        try await http.send(body, gzip: gzip)
    }

    public func attachmentHeld(_ sha256: String) async throws -> AttachmentHolding {
        try HTTPTransport.checkHash(sha256)
        let response = try await authorized { token in try await exchange.run(request(.HEAD, sha256, token: token)) }
        if response.status == 404 { return .absent }
        guard (200..<300).contains(response.status) else { throw http.failure(response.status, response.body, sha256) }
        return try holding(response, sha256)
    }

    /// `HTTPTransport`'s `…/attachments/<sha256>`.
    func request(_ method: HTTPMethod, _ sha256: String, token: String?) -> HTTPRequestHead {
        let url = http.attachmentURL(sha256)
        var headers = HTTPHeaders()
        headers.add(name: "Host", value: host)
        for (name, value) in http.configuration.headers { headers.add(name: name, value: value) }
        if let token { headers.add(name: "Authorization", value: "Bearer \(token)") }
        let path = URLComponents(url: url, resolvingAgainstBaseURL: true)?.percentEncodedPath ?? ""
        return HTTPRequestHead(version: .http1_1, method: method, uri: path.isEmpty ? "/" : path, headers: headers)
    }

    /// `exchange` with the token, and once more with a refreshed one after a 401.
    func authorized(_ exchange: (String?) async throws -> AttachmentExchange.Response) async throws -> AttachmentExchange.Response {
        let response = try await exchange(try await http.token?(false))
        guard response.status == 401, let token = http.token else { return response }
        return try await exchange(try await token(true))
    }

    /// `Upload-Offset` and `Upload-Complete` as what the server holds.
    func holding(_ response: AttachmentExchange.Response, _ sha256: String) throws -> AttachmentHolding {
        try HTTPTransport.holding(
            uploadOffset: response.headers.first(name: "Upload-Offset"), uploadComplete: response.headers.first(name: "Upload-Complete"), sha256)
    }
}
