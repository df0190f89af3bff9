import FieldMergeProtocol
@testable import FieldMergeSyncHTTP
import FieldMergeSyncNIO
import Foundation
import Hummingbird
import Synchronization
import Testing

/// ``HTTPLiveChannel`` against routes written here to the live contract (`GET /sync/events`,
/// `GET /sync/poll`); the event stream's cases run on `NIOLiveChannel` too, which must behave
/// the same. The pauses only spread the server's writes; what is checked is what arrives and
/// in which order, never how fast. The time limit only keeps a failure from hanging the suite.
@Suite(.timeLimit(.minutes(2))) struct HTTPLiveChannelTests {
    /// The two channels that speak Server-Sent Events.
    enum Kind: CaseIterable, Sendable {
        case urlSession
        case nio

        func channel(
            _ syncURL: URL, configuration: HTTPLiveChannel.Configuration = .init(), token: HTTPTransport.TokenProvider? = nil
        ) throws -> any LiveChannel {
            switch self {
            case .urlSession: HTTPLiveChannel(syncURL: syncURL, configuration: configuration, token: token)
            case .nio: try NIOLiveChannel(syncURL: syncURL, configuration: configuration, token: token)
            }
        }
    }

    static let changes = LiveEvent.changes(
        after: 4, revision: 5, response: Array(#"{"maxRevision":5,"changeSets":[{"types":["lists"],"lists":{"create":[],"update":[],"delete":[2]}}]}"#.utf8))

    static func write(_ bytes: [UInt8], _ writer: inout any ResponseBodyWriter) async throws {
        try await writer.write(ByteBuffer(bytes: bytes))
    }

    /// Every event of `stream` until it finishes (or throws).
    static func collect(_ stream: AsyncThrowingStream<LiveEvent, any Error>) async throws -> [LiveEvent] {
        var events: [LiveEvent] = []
        for try await event in stream { events.append(event) }
        return events
    }

    @Test(arguments: Kind.allCases) func events_arriveAsWritten_beforeTheResponseEnds(kind: Kind) async throws {
        let seen = SeenRequests()
        let release = Gate()
        let ended = Gate()
        try await LiveTestServer.run({ router in
            router.get("/sync/events") { request, _ in
                seen.record(request)
                return LiveTestServer.eventStream { writer in
                    try await Self.write(LiveEvent.ready(revision: 3).serverSentEvent + LiveEvent.keepAlive, &writer)
                    try await Task.sleep(for: .milliseconds(200))
                    try await Self.write(LiveEvent.keepAlive, &writer)
                    try await Self.write(LiveEvent.poke(revision: 4).serverSentEvent, &writer)
                    try await Task.sleep(for: .milliseconds(200))
                    // One event in two writes, apart.
                    let bytes = Self.changes.serverSentEvent
                    try await Self.write(Array(bytes.prefix(bytes.count / 2)), &writer)
                    try await Task.sleep(for: .milliseconds(100))
                    try await Self.write(Array(bytes.dropFirst(bytes.count / 2)), &writer)
                    await release.wait()
                    ended.open()
                    try await writer.finish(nil)
                }
            }
        }) { syncURL in
            let channel = try kind.channel(syncURL, token: { _ in "t0ken" })
            var events = channel.events(since: 3).makeAsyncIterator()
            var received: [LiveEvent] = []
            for _ in 0..<3 { received.append(try #require(try await events.next())) }
            #expect(received == [.ready(revision: 3), .poke(revision: 4), Self.changes])
            #expect(!ended.isOpen, "the events came while the response was still open")
            release.open()
            let end = try await events.next()
            #expect(end == nil, "the server's end of the stream is a normal end")
            #expect(seen.all == [.init(path: "/sync/events", since: "3", authorization: "Bearer t0ken", accept: "text/event-stream")])
        }
    }

    /// The silence timeout of the tests that need one. Generous: the whole suite runs in
    /// parallel on two cores, and this process's server and channel share them; 3 s was
    /// once not enough for a keep-alive written every 250 ms to arrive.
    static let silence: Double = 8

    /// Keep-alives alone, for longer than the silence timeout, keep the stream open.
    @Test(arguments: Kind.allCases) func keepAlives_resetTheSilenceTimeout(kind: Kind) async throws {
        try await LiveTestServer.run({ router in
            router.get("/sync/events") { _, _ in
                LiveTestServer.eventStream { writer in
                    try await Self.write(LiveEvent.ready(revision: 1).serverSentEvent, &writer)
                    for _ in 0..<Int(Self.silence * 4 + 8) {
                        try await Task.sleep(for: .milliseconds(250))
                        try await Self.write(LiveEvent.keepAlive, &writer)
                    }
                    try await Self.write(LiveEvent.poke(revision: 2).serverSentEvent, &writer)
                    try await writer.finish(nil)
                }
            }
        }) { syncURL in
            let channel = try kind.channel(syncURL, configuration: .init(silenceTimeout: Self.silence))
            let events = try await Self.collect(channel.events(since: 1))
            #expect(events == [.ready(revision: 1), .poke(revision: 2)])
        }
    }

    @Test(arguments: Kind.allCases) func a401_isRetriedOnce_withARefreshedToken(kind: Kind) async throws {
        let seen = SeenRequests()
        try await LiveTestServer.run({ router in
            router.get("/sync/events") { request, _ in
                guard seen.record(request).seen.authorization == "Bearer fresh" else {
                    return LiveTestServer.error(.unauthorized, "unauthenticated", "the token expired")
                }
                return LiveTestServer.eventStream { writer in
                    try await Self.write(LiveEvent.ready(revision: 1).serverSentEvent, &writer)
                    try await writer.finish(nil)
                }
            }
        }) { syncURL in
            let source = TokenRefreshTests.TokenSource(["stale", "fresh"])
            let channel = try kind.channel(syncURL, token: { source.next(refresh: $0) })
            let events = try await Self.collect(channel.events(since: 0))
            #expect(events == [.ready(revision: 1)])
            #expect(source.calls.withLock { $0 } == [false, true])
            #expect(seen.all.map(\.authorization) == ["Bearer stale", "Bearer fresh"])

            // A second 401 is a rejection, not asked again.
            let stale = try kind.channel(syncURL, token: { _ in "stale" })
            let error = await #expect(throws: SyncRequestRejected.self) { try await Self.collect(stale.events(since: 0)) }
            #expect(error?.status == 401 && error?.code == "unauthenticated" && error?.message == "the token expired")
            #expect(seen.all.count == 4)
        }
    }

    /// What each failure before or inside the stream throws (the route answers by `since`).
    @Test(arguments: Kind.allCases) func failures_throwTheErrorContractsErrors(kind: Kind) async throws {
        try await LiveTestServer.run({ router in
            router.get("/sync/events") { request, _ in
                switch request.uri.queryParameters["since"].map(String.init) {
                case "1"?: return LiveTestServer.error(.forbidden, "forbidden", "not your data")
                case "2"?: return LiveTestServer.error(.serviceUnavailable, "unavailable", "shutting down")
                case "3"?: return Response(status: .ok, headers: [.contentType: "text/html"], body: ResponseBody(byteBuffer: ByteBuffer(string: "<html>")))
                default:
                    return LiveTestServer.eventStream { writer in
                        try await Self.write(LiveEvent.ready(revision: 4).serverSentEvent, &writer)
                        try await Self.write(Array("event: ready\ndata: four\n\n".utf8), &writer)
                        try await writer.finish(nil)
                    }
                }
            }
        }) { syncURL in
            let channel = try kind.channel(syncURL)
            let forbidden = await #expect(throws: SyncRequestRejected.self) { try await Self.collect(channel.events(since: 1)) }
            #expect(forbidden?.status == 403 && forbidden?.code == "forbidden" && forbidden?.message == "not your data")
            let unavailable = await #expect(throws: TransportError.self) { try await Self.collect(channel.events(since: 2)) }
            #expect(unavailable?.message.contains("503") == true && unavailable?.message.contains("shutting down") == true)
            let html = await #expect(throws: TransportError.self) { try await Self.collect(channel.events(since: 3)) }
            #expect(html?.message.contains("text/html") == true)

            // The events before a malformed one arrive; then the stream throws its WireError.
            var events = channel.events(since: 4).makeAsyncIterator()
            let first = try await events.next()
            #expect(first == .ready(revision: 4))
            let malformed = await #expect(throws: WireError.self) { _ = try await events.next() }
            #expect(malformed?.code == .invalidValue)
        }
        try await HTTPTransportTests.withClosedPort { closed in
            let unreachable = try kind.channel(URL(string: "http://127.0.0.1:\(closed)/sync")!)
            await #expect(throws: TransportError.self) { try await Self.collect(unreachable.events(since: 0)) }
        }
    }

    /// No byte for the silence timeout, before the head or after an event: TransportError.
    @Test(arguments: Kind.allCases) func silence_throwsTransportError(kind: Kind) async throws {
        let release = Gate()
        try await LiveTestServer.run({ router in
            router.get("/sync/events") { request, _ in
                if request.uri.queryParameters["since"] == "0" {
                    await release.wait()  // not even a head
                    return Response(status: .noContent)
                }
                return LiveTestServer.eventStream { writer in
                    try await Self.write(LiveEvent.ready(revision: 1).serverSentEvent, &writer)
                    await release.wait()
                    try await writer.finish(nil)
                }
            }
        }) { syncURL in
            defer { release.open() }
            // Long enough for the first event to arrive on a loaded machine (1 s, then 3 s, were not).
            let channel = try kind.channel(syncURL, configuration: .init(silenceTimeout: Self.silence))
            var events = channel.events(since: 1).makeAsyncIterator()
            let first = try await events.next()
            #expect(first == .ready(revision: 1))
            let silent = await #expect(throws: TransportError.self) { _ = try await events.next() }
            #expect(silent?.message.contains("no bytes for 8.0 s") == true, "\(String(describing: silent))")
            let headless = await #expect(throws: TransportError.self) { try await Self.collect(channel.events(since: 0)) }
            #expect(headless?.message.contains("no bytes") == true)
        }
    }

    @Test(arguments: Kind.allCases) func cancellingTheConsumer_closesTheServersStream(kind: Kind) async throws {
        let (endings, ending) = AsyncStream.makeStream(of: String.self)
        try await LiveTestServer.run({ router in
            router.get("/sync/events") { _, _ in
                LiveTestServer.eventStream { writer in
                    do {
                        try await Self.write(LiveEvent.ready(revision: 1).serverSentEvent, &writer)
                        for _ in 0..<600 {  // 30 s at most
                            try await Task.sleep(for: .milliseconds(50))
                            try await Self.write(LiveEvent.keepAlive, &writer)
                        }
                        ending.yield("the server wrote every keep-alive")
                        try await writer.finish(nil)
                    } catch {
                        ending.yield("closed: \(error)")
                        throw error
                    }
                }
            }
        }) { syncURL in
            let channel = try kind.channel(syncURL)
            let (arrivals, arrived) = AsyncStream.makeStream(of: LiveEvent.self)
            let consumer = Task {
                for try await event in channel.events(since: 1) { arrived.yield(event) }
            }
            var first = arrivals.makeAsyncIterator()
            #expect(await first.next() == .ready(revision: 1))
            consumer.cancel()
            var ends = endings.makeAsyncIterator()
            let end = await ends.next()
            #expect(end?.hasPrefix("closed") == true, "\(end ?? "no end")")
            _ = await consumer.result
        }
    }

    @Test func longPoll_204ThenAnEvent_thenPollsFromItsRevision() async throws {
        let seen = SeenRequests()
        let (thirds, third) = AsyncStream.makeStream(of: Void.self)
        let changes = LiveEvent.changes(after: 7, revision: 9, response: Array(#"{"maxRevision":9,"changeSets":[]}"#.utf8))
        try await LiveTestServer.run({ router in
            router.get("/sync/poll") { request, _ in
                switch seen.record(request).index {
                case 0:
                    return Response(status: .noContent)
                case 1:
                    return LiveTestServer.eventStream { writer in
                        try await Self.write(changes.serverSentEvent, &writer)
                        try await writer.finish(nil)
                    }
                default:
                    third.yield()
                    try await Task.sleep(for: .milliseconds(100))
                    return Response(status: .noContent)
                }
            }
        }) { syncURL in
            let channel = HTTPLiveChannel(syncURL: syncURL, mode: .longPoll(wait: 5), token: { _ in "t0ken" })
            let (arrivals, arrived) = AsyncStream.makeStream(of: LiveEvent.self)
            let consumer = Task {
                for try await event in channel.events(since: 7) { arrived.yield(event) }
            }
            var events = arrivals.makeAsyncIterator()
            #expect(await events.next() == changes)
            var polls = thirds.makeAsyncIterator()
            await polls.next()
            consumer.cancel()
            _ = await consumer.result
            let seen = seen.all
            #expect(seen.prefix(3).map(\.since) == ["7", "7", "9"])
            #expect(seen.allSatisfy { $0.path == "/sync/poll" && $0.wait == "5" && $0.authorization == "Bearer t0ken" })
        }
    }

    /// A poll answered 200 without an event breaks the contract: the WireError.
    @Test func longPoll_200WithoutAnEvent_throwsWireError() async throws {
        try await LiveTestServer.run({ router in
            router.get("/sync/poll") { _, _ in
                LiveTestServer.eventStream { writer in
                    try await Self.write(LiveEvent.keepAlive, &writer)
                    try await writer.finish(nil)
                }
            }
        }) { syncURL in
            let channel = HTTPLiveChannel(syncURL: syncURL, mode: .longPoll(wait: 1))
            let error = await #expect(throws: WireError.self) { try await Self.collect(channel.events(since: 0)) }
            #expect(error?.code == .invalidValue)
        }
    }

    /// The channel's URLSession lets go of its delegate once the channel and its streams are
    /// gone (a session keeps its delegate until it is invalidated).
    @Test func theSessionsDelegate_isReleased_withTheChannel() async throws {
        try await LiveTestServer.run({ router in
            router.get("/sync/events") { _, _ in
                LiveTestServer.eventStream { writer in
                    try await Self.write(LiveEvent.ready(revision: 1).serverSentEvent, &writer)
                    try await writer.finish(nil)
                }
            }
        }) { syncURL in
            weak var delegate: StreamingDownload?
            do {
                let channel = HTTPLiveChannel(syncURL: syncURL)
                delegate = channel.download
                #expect(try await Self.collect(channel.events(since: 0)) == [.ready(revision: 1)])
            }
            // The stream's task and the session's queue let go on their own time.
            for _ in 0..<500 where delegate != nil { try await Task.sleep(for: .milliseconds(10)) }
            #expect(delegate == nil)
        }
    }

    @Test func endpoints_extendTheSyncURL() {
        let channel = HTTPLiveChannel(syncURL: URL(string: "https://example.com/api/sync?tenant=acme")!)
        #expect(channel.endpoint("events", ["since": "12"]).absoluteString == "https://example.com/api/sync/events?tenant=acme&since=12")
        let slash = HTTPLiveChannel(syncURL: URL(string: "http://127.0.0.1:8080/sync/")!)
        #expect(slash.endpoint("poll", ["since": "0", "wait": "30"]).absoluteString == "http://127.0.0.1:8080/sync/poll?since=0&wait=30")
        // A device that names its schema is a `SyncClient`'s: it checks a scoped page's holdings.
        #expect(
            channel.endpoint("events", ["since": "3"], schema: "f00d").absoluteString
                == "https://example.com/api/sync/events?tenant=acme&since=3&schema=f00d&pages=scoped&encoding=gzip")
    }
}
