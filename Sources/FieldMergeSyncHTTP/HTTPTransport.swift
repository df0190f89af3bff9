import FieldMergeProtocol
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Carries sync requests to a server's `POST /sync` over HTTP, with `URLSession`.
///
/// URLSession, not AsyncHTTPClient: on Linux it comes with the toolchain's Foundation
/// (`FoundationNetworking`, on libcurl), so it costs nothing extra to build, and apps on
/// Apple platforms already have it and its proxy, cellular and TLS settings. AsyncHTTPClient
/// would bring SwiftNIO and its TLS stack into every app that syncs.
///
/// The request body goes as given (`Content-Encoding: gzip` when the client gzip'd it);
/// `Accept-Encoding: gzip` is always sent. The response body comes back as it arrived or as
/// URLSession already inflated it: libcurl on Linux and Apple's URLSession both undo
/// `Content-Encoding: gzip` themselves, and `SyncClient` tells gzip from JSON by the
/// magic bytes, so either way reads right.
///
/// Errors: an unreachable server, a timeout, a dropped connection, a 5xx, 408 or 429 throw
/// `TransportError` (retry later: a round that fails changes nothing, and a request whose
/// answer was lost is recognised by its id). Any other status throws
/// `SyncRequestRejected` carrying the status and the server's `{"error", "message"}`:
/// sending the same request again would be refused again. `SyncClient` lets both reach
/// the caller of `sync()` with the store unchanged. A 401 is retried once with a refreshed
/// token when the transport has a token callback (see ``init(url:configuration:token:)``).
public struct HTTPTransport: SyncTransport {
    /// Timeouts and extra headers.
    public struct Configuration: Sendable {
        /// The longest wait for the connection or for the next bytes of the response, in seconds.
        public var requestTimeout: Double
        /// The longest a whole exchange (upload, server work, download) may take, in seconds.
        public var resourceTimeout: Double
        /// Headers added to every request (an `Authorization`, say).
        public var headers: [String: String]
        /// The largest response body taken, in bytes, after URLSession inflated it (it undoes
        /// `Content-Encoding: gzip` itself): the download stops as soon as the inflated body
        /// passes it, so memory never holds more. The codec's limit by default.
        public var maxResponseBytes: Int
        /// The bytes of an attachment one upload request carries (4 MiB by default): read
        /// from the file into memory one piece at a time, each piece a `PUT` that the
        /// server appends (Specs/attachments.md §4).
        public var attachmentPieceBytes: Int
        /// The bytes of an attachment one download request asks for (16 MiB by default),
        /// written into the file as they arrive: a dropped connection loses none of them,
        /// and what URLSession holds in memory while the file's writes catch up with a
        /// fast network is at most one piece.
        public var attachmentDownloadPieceBytes: Int

        public init(
            requestTimeout: Double = 60, resourceTimeout: Double = 600, headers: [String: String] = [:],
            maxResponseBytes: Int = WireLimits().maxDecompressedBytes, attachmentPieceBytes: Int = 4 << 20,
            attachmentDownloadPieceBytes: Int = 16 << 20
        ) {
            self.requestTimeout = requestTimeout
            self.resourceTimeout = resourceTimeout
            self.headers = headers
            self.maxResponseBytes = maxResponseBytes
            self.attachmentPieceBytes = max(1, attachmentPieceBytes)
            self.attachmentDownloadPieceBytes = max(1, attachmentDownloadPieceBytes)
        }
    }

    /// Supplies the bearer token: `refresh` is false before a request and true after the
    /// server answered 401 (fetch a new one); nil sends no `Authorization` header.
    public typealias TokenProvider = @Sendable (_ refresh: Bool) async throws -> String?

    /// The endpoint, e.g. `http://127.0.0.1:8080/sync`.
    public let url: URL
    public let configuration: Configuration
    private let owner: SessionOwner
    var session: URLSession { owner.session }
    let download: BoundedDownload
    package let token: TokenProvider?
    /// Attachment downloads, written into files as they arrive (a session of their own:
    /// a session has one delegate).
    let attachmentSession: SessionOwner
    let attachmentFiles: FileDownload

    /// - Parameters:
    ///   - url: The full URL of the sync endpoint, path included.
    ///   - configuration: Timeouts, extra headers and the largest response taken.
    ///   - token: The app's bearer token (a JWT its login gave it), sent as
    ///     `Authorization: Bearer <token>`. On a 401 the transport asks for it again with
    ///     `refresh: true` and sends the same body once more; a second 401 throws
    ///     `SyncRequestRejected` (status 401, code `unauthenticated`). An error the
    ///     callback throws reaches the caller of `sync()`.
    public init(url: URL, configuration: Configuration = Configuration(), token: TokenProvider? = nil) {
        self.url = url
        self.configuration = configuration
        self.token = token
        let sessionConfiguration = URLSessionConfiguration.ephemeral
        sessionConfiguration.timeoutIntervalForRequest = configuration.requestTimeout
        sessionConfiguration.timeoutIntervalForResource = configuration.resourceTimeout
        sessionConfiguration.urlCache = nil
        sessionConfiguration.httpCookieStorage = nil
        sessionConfiguration.requestCachePolicy = .reloadIgnoringLocalCacheData
        download = BoundedDownload()
        owner = SessionOwner(URLSession(configuration: sessionConfiguration, delegate: download, delegateQueue: nil))
        attachmentFiles = FileDownload()
        attachmentSession = SessionOwner(URLSession(configuration: sessionConfiguration, delegate: attachmentFiles, delegateQueue: nil))
    }

    public func send(_ body: [UInt8], gzip: Bool) async throws -> [UInt8] {
        do {
            return try await send(body, gzip: gzip, token: try await token?(false))
        } catch let rejected as SyncRequestRejected where rejected.status == 401 && token != nil {
            return try await send(body, gzip: gzip, token: try await token?(true))
        }
    }

    /// One exchange, with `token` as the bearer token when given.
    private func send(_ body: [UInt8], gzip: Bool, token: String?) async throws -> [UInt8] {
        var request = URLRequest(url: url, cachePolicy: .reloadIgnoringLocalCacheData, timeoutInterval: configuration.requestTimeout)
        request.httpMethod = "POST"
        for (name, value) in configuration.headers { request.setValue(value, forHTTPHeaderField: name) }
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.setValue("gzip", forHTTPHeaderField: "Accept-Encoding")
        if gzip { request.setValue("gzip", forHTTPHeaderField: "Content-Encoding") }
        request.httpBody = Data(body)

        let bytes: [UInt8]
        let response: URLResponse
        do {
            (bytes, response) = try await download.data(for: request, on: session, limit: configuration.maxResponseBytes)
        } catch let tooLarge as BoundedDownload.TooLarge {
            throw SyncRequestRejected(
                status: tooLarge.status, code: "tooLarge",
                message: "the response passed the client's limit of \(tooLarge.limit) bytes (\(tooLarge.received) received, inflated); the download was stopped")
        } catch {
            try Task.checkCancellation()
            throw TransportError(Self.describe(error))
        }
        guard let http = response as? HTTPURLResponse else { throw TransportError("not an HTTP response from \(url)") }
        guard (200..<300).contains(http.statusCode) else {
            throw SyncStatus.clientError(status: http.statusCode, body: bytes, origin: url.absoluteString)
        }
        return bytes
    }
}

/// Owns a transport's URLSession: a session keeps itself and its delegate until it is
/// invalidated, so the last copy of the transport to go lets requests in flight finish and
/// then invalidates it (otherwise every transport made would stay in memory).
final class SessionOwner: Sendable {
    let session: URLSession

    init(_ session: URLSession) { self.session = session }

    deinit { session.finishTasksAndInvalidate() }
}
