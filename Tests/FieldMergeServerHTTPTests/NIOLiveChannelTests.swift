import FieldMergeProtocol
import FieldMergeSyncNIO
import Foundation
import Hummingbird
import Testing

/// What `NIOLiveChannel` adds to the cases it shares with `HTTPLiveChannel`
/// (`HTTPLiveChannelTests`): the URLs it takes, and the query a device's schema and
/// subscriptions make.
@Suite(.timeLimit(.minutes(1))) struct NIOLiveChannelTests {
    @Test func onlyPlainHTTPWithAHost_isTaken() throws {
        for text in ["https://example.com/sync", "ftp://example.com/sync", "file:///tmp/sync"] {
            let error = #expect(throws: NIOLiveChannel.UnsupportedURL.self) { try NIOLiveChannel(syncURL: URL(string: text)!) }
            #expect(error?.description.contains(text) == true)
        }
        let channel = try NIOLiveChannel(syncURL: URL(string: "http://127.0.0.1:8080/api/sync")!)
        #expect(channel.syncURL.path == "/api/sync")
    }

    /// The request names the revision, the schema and the subscriptions as `HTTPLiveChannel`
    /// does: the route answers `ready(1)` only when all three arrived as sent.
    @Test func theQuery_namesRevisionSchemaAndSubscriptions() async throws {
        try await LiveTestServer.run({ router in
            router.get("/sync/events") { request, _ in
                let query = request.uri.queryParameters
                let expected = query["since"] == "41" && query["schema"] == "f1ng3r" && query["subscriptions"] == "project=3,42"
                return LiveTestServer.eventStream { writer in
                    try await HTTPLiveChannelTests.write(LiveEvent.ready(revision: expected ? 1 : 0).serverSentEvent, &writer)
                    try await writer.finish(nil)
                }
            }
        }) { syncURL in
            let channel = try NIOLiveChannel(syncURL: syncURL)
            let subscriptions = ScopeHoldings(["project": .ids([3, 42])])
            let events = try await HTTPLiveChannelTests.collect(channel.events(since: 41, schema: "f1ng3r", subscriptions: subscriptions))
            #expect(events == [.ready(revision: 1)])
        }
    }
}
