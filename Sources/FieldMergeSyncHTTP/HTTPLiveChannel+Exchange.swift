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
        let activity = Activity()
        let sink = EventSink(url: url, maxEventBytes: configuration.maxEventBytes, activity: activity, onEvent)
        let (task, ended) = download.start(request, on: owner.session, into: sink)
        defer { task.cancel() }  // nothing when it completed; else closes the connection
        do {
            return try await withThrowingTaskGroup(of: Answer?.self) { group in
                group.addTask {
                    try await activity.watch(silence: silence, url: url)
                    return nil
                }
                group.addTask {
                    do {
                        for try await _ in ended {}
                    } catch {
                        throw sink.failure ?? error
                    }
                    if let failure = sink.failure { throw failure }
                    try Task.checkCancellation()
                    return try sink.answer()
                }
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
}

/// Reads one response of the channel where URLSession delivers it: its events, handed on as
/// each is complete, or the start of its error body.
final class EventSink: ResponseSink {
    private struct State {
        var status = 0
        var parser: ServerSentEventParser
        var errorBody: [UInt8] = []
        var last: Int64?
        var failure: (any Error)?
    }

    private let state: Mutex<State>
    private let url: URL
    private let activity: Activity
    private let onEvent: @Sendable (LiveEvent) -> Void

    init(url: URL, maxEventBytes: Int, activity: Activity, _ onEvent: @escaping @Sendable (LiveEvent) -> Void) {
        state = Mutex(State(parser: ServerSentEventParser(maxBytes: maxEventBytes)))
        self.url = url
        self.activity = activity
        self.onEvent = onEvent
    }

    /// Why the sink ended the exchange: an event stream that is not one, or an event it could
    /// not read.
    var failure: (any Error)? { state.withLock { $0.failure } }

    func head(status: Int, contentType: String?) -> Bool {
        activity.touch()
        return state.withLock { state in
            state.status = status
            guard (200..<300).contains(status), status != 204 else { return true }
            let mediaType = contentType?.split(separator: ";").first?.trimmingCharacters(in: .whitespaces).lowercased()
            guard mediaType == "text/event-stream" else {
                state.failure = TransportError("HTTP \(status) from \(url.absoluteString) is \(contentType ?? "untyped"), not text/event-stream")
                return false
            }
            return true
        }
    }

    func body(_ data: Data) -> Bool {
        activity.touch()
        return state.withLock { state in
            guard (200..<300).contains(state.status) else {
                state.errorBody += data.prefix(HTTPLiveChannel.maxErrorBody - state.errorBody.count)
                return true
            }
            do {
                for message in try state.parser.feed(data) {
                    let event = try LiveEvent(type: message.type, id: message.id, data: message.data)
                    state.last = event.revision
                    onEvent(event)
                }
                return true
            } catch {
                state.failure = error
                return false
            }
        }
    }

    /// What the response came to, once it ended without a failure.
    func answer() throws -> HTTPLiveChannel.Answer {
        let (status, last, errorBody) = state.withLock { ($0.status, $0.last, $0.errorBody) }
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
