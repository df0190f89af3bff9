import FieldMergeProtocol
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Synchronization

extension HTTPLiveChannel {
    /// What one GET of the channel came to, once its response ended.
    enum Answer: Sendable {
        /// A status outside 2xx, and the start of its body (the server's error JSON).
        case refused(status: Int, body: [UInt8])
        /// 204: nothing new (a long-poll's `wait` passed).
        case noContent
        /// An event stream that ended; the revision of its last event, if it had one.
        case ended(last: Int64?)
    }

    /// The most of an error body kept: the server's `{"error", "message"}` is far smaller.
    static let maxErrorBody = 64 << 10

    /// GETs `url` with the bearer token, and once more with a fresh one after a 401; hands
    /// each event to `onEvent` as it arrives.
    func exchange(_ url: URL, silence: Double, _ onEvent: @escaping @Sendable (LiveEvent) -> Void) async throws -> Answer {
        let answer = try await exchange(url, token: try await token?(false), silence: silence, onEvent)
        guard case .refused(401, _) = answer, let token else { return answer }
        return try await exchange(url, token: try await token(true), silence: silence, onEvent)
    }

    /// One GET, cut with a `TransportError` when no byte arrives for `silence` seconds.
    private func exchange(_ url: URL, token: String?, silence: Double, _ onEvent: @escaping @Sendable (LiveEvent) -> Void) async throws -> Answer {
        // URLSession's own timeout (also one between bytes) only backs the channel's up.
        var request = URLRequest(url: url, cachePolicy: .reloadIgnoringLocalCacheData, timeoutInterval: min(silence, 1e9).rounded(.up) + 15)
        request.httpMethod = "GET"
        for (name, value) in configuration.headers { request.setValue(value, forHTTPHeaderField: name) }
        if let token { request.setValue("Bearer \(token)", forHTTPHeaderField: "Authorization") }
        request.setValue("text/event-stream", forHTTPHeaderField: "Accept")
        request.setValue("no-cache", forHTTPHeaderField: "Cache-Control")
        let (task, parts) = download.start(request, on: owner.session)
        defer { task.cancel() }  // nothing when it completed; else closes the connection
        let activity = Activity()
        let maxEventBytes = configuration.maxEventBytes
        do {
            return try await withThrowingTaskGroup(of: Answer?.self) { group in
                group.addTask {
                    try await activity.watch(silence: silence, url: url)
                    return nil
                }
                group.addTask { try await Self.read(parts, activity: activity, maxEventBytes: maxEventBytes, url: url, onEvent) }
                defer { group.cancelAll() }
                while let result = try await group.next() {
                    if let answer = result { return answer }
                }
                throw CancellationError()
            }
        } catch let error where error is WireError || error is TransportError || error is CancellationError {
            throw error
        } catch {
            try Task.checkCancellation()
            throw TransportError(HTTPTransport.describe(error))
        }
    }

    /// Reads one response: its events, or the start of its error body.
    private static func read(
        _ parts: AsyncThrowingStream<StreamingDownload.Part, any Error>, activity: Activity, maxEventBytes: Int, url: URL,
        _ onEvent: (LiveEvent) -> Void
    ) async throws -> Answer {
        var parser = ServerSentEventParser(maxBytes: maxEventBytes)
        var status = 0
        var errorBody: [UInt8] = []
        var last: Int64?
        for try await part in parts {
            activity.touch()
            switch part {
            case .head(let code, let contentType):
                status = code
                guard (200..<300).contains(code), code != 204 else { continue }
                let mediaType = contentType?.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased()
                guard mediaType == "text/event-stream" else {
                    throw TransportError("HTTP \(code) from \(url.absoluteString) is \(contentType ?? "untyped"), not text/event-stream")
                }
            case .bytes(let data):
                guard (200..<300).contains(status) else {
                    errorBody += data.prefix(Self.maxErrorBody - errorBody.count)
                    continue
                }
                for message in try parser.feed(data) {
                    let event = try LiveEvent(type: message.type, id: message.id, data: message.data)
                    last = event.revision
                    onEvent(event)
                }
            }
        }
        try Task.checkCancellation()
        switch status {
        case 0: throw TransportError("no response from \(url.absoluteString)")
        case 204: return .noContent
        case 200..<300: return .ended(last: last)
        default: return .refused(status: status, body: errorBody)
        }
    }
}

/// When the last byte of a response arrived, and the watch that ends a silent one.
final class Activity: Sendable {
    private let last = Mutex(ContinuousClock.now)

    func touch() { last.withLock { $0 = .now } }

    /// Returns only by throwing: a `TransportError` once `silence` seconds passed without a
    /// byte, or `CancellationError` when the exchange ended first.
    func watch(silence: Double, url: URL) async throws {
        let window = Duration.seconds(min(max(silence, 0), 1e9))
        while true {
            let deadline = last.withLock { $0 } + window
            if ContinuousClock.now >= deadline {
                throw TransportError("no bytes for \(silence) s from \(url.absoluteString)")
            }
            try await Task.sleep(until: deadline, clock: .continuous)
        }
    }
}
