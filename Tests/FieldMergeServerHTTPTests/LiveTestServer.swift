import FieldMergeProtocol
import Foundation
import Hummingbird
import Logging
import Synchronization

/// A Hummingbird application with a test's own routes, on 127.0.0.1 at a port the system
/// picked: the other end of `HTTPLiveChannel` before the real server has its live routes.
enum LiveTestServer {
    /// Runs `body` with the `…/sync` URL of an application whose routes `routes` adds, then
    /// shuts it down.
    static func run<T>(_ routes: (Router<BasicRequestContext>) -> Void, _ body: (URL) async throws -> T) async throws -> T {
        let router = Router()
        routes(router)
        let (ports, listening) = AsyncStream.makeStream(of: Int.self)
        let application = Application(
            router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0)),
            onServerRunning: { channel in listening.yield(channel.localAddress?.port ?? 0) },
            logger: Logger(label: "live-test", factory: { _ in SwiftLogNoOpLogHandler() }))
        return try await withThrowingTaskGroup(of: Void.self) { group in
            group.addTask {
                defer { listening.finish() }
                try await application.run()
            }
            defer { group.cancelAll() }
            var iterator = ports.makeAsyncIterator()
            guard let port = await iterator.next() else {
                try await group.waitForAll()
                throw ServerDidNotStart()
            }
            return try await body(URL(string: "http://127.0.0.1:\(port)/sync")!)
        }
    }

    /// A 200 event stream whose body `write` writes.
    static func eventStream(_ write: @escaping @Sendable (inout any ResponseBodyWriter) async throws -> Void) -> Response {
        Response(status: .ok, headers: [.contentType: "text/event-stream", .cacheControl: "no-cache"], body: ResponseBody(write))
    }

    /// The server's error answer: `{"error": code, "message": message}`.
    static func error(_ status: HTTPResponse.Status, _ code: String, _ message: String) -> Response {
        let body = WireErrorBody(error: code, message: message).json
        return Response(status: status, headers: [.contentType: "application/json"], body: ResponseBody(byteBuffer: ByteBuffer(bytes: body)))
    }
}

/// What the routes saw of each request, in order.
final class SeenRequests: Sendable {
    struct Seen: Sendable, Equatable {
        var path: String
        var since: String?
        var wait: String?
        var authorization: String?
        var accept: String?
    }

    private let list = Mutex<[Seen]>([])

    /// Records `request`; returns what was seen and how many requests came before it.
    @discardableResult
    func record(_ request: Request) -> (seen: Seen, index: Int) {
        let query = request.uri.queryParameters
        let seen = Seen(
            path: request.uri.path, since: query["since"].map(String.init), wait: query["wait"].map(String.init),
            authorization: request.headers[.authorization], accept: request.headers[.accept])
        return list.withLock { list in
            list.append(seen)
            return (seen, list.count - 1)
        }
    }

    var all: [Seen] { list.withLock { $0 } }
}

/// Holds routes until the test opens it (or, so that nothing hangs, a long time passed); or
/// tells the test that a route got somewhere.
final class Gate: Sendable {
    private let state = Mutex(false)

    func open() { state.withLock { $0 = true } }

    var isOpen: Bool { state.withLock { $0 } }

    func wait(atMost limit: Duration = .seconds(30)) async {
        let end = ContinuousClock.now + limit
        while !isOpen, ContinuousClock.now < end {
            try? await Task.sleep(for: .milliseconds(20))
        }
    }
}
