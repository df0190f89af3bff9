import FieldMergeProtocol
import FieldMergeSQLite
import FieldMergeSync
import FieldMergeServer
import FieldMergeServerSQLite
import FieldMergeServerAuth
import FieldMergeSyncHTTP
import Foundation
import Synchronization
import Testing

/// ``HTTPTransport``'s token callback: sent as a bearer token, refreshed once after a 401.
@Suite struct TokenRefreshTests {
    static let catchUp = Array(#"{"maxRevision":0,"changeSets":[]}"#.utf8)

    /// Hands out `tokens` in turn and records each call's `refresh`.
    final class TokenSource: Sendable {
        let calls = Mutex<[Bool]>([])
        let tokens: [String]
        init(_ tokens: [String]) { self.tokens = tokens }

        func next(refresh: Bool) -> String {
            calls.withLock { calls in
                calls.append(refresh)
                return tokens[min(calls.count, tokens.count) - 1]
            }
        }
    }

    @Test func a401_asksForAFreshToken_andRetriesOnce() async throws {
        let expired = try await TestTokens.token("ann", expiresIn: -60)
        let fresh = try await TestTokens.token("ann")
        let source = TokenSource([expired, fresh])
        try await withAuthenticatedServer(try RevisionServer(.memory, schema: httpTestSchema()), verifier: try await TestTokens.verifier()) { running in
            let transport = HTTPTransport(url: running.syncURL, token: { source.next(refresh: $0) })
            let response = try await transport.send(Self.catchUp, gzip: false)
            #expect(String(decoding: response, as: UTF8.self).contains("\"maxRevision\":0"))
            #expect(source.calls.withLock { $0 } == [false, true])
            #expect(running.http.statistics.syncs == 1)
        }
    }

    @Test func aSecond401_throwsUnauthenticated_notRetryable() async throws {
        let expired = try await TestTokens.token("ann", expiresIn: -60)
        let source = TokenSource([expired])
        try await withAuthenticatedServer(try RevisionServer(.memory, schema: httpTestSchema()), verifier: try await TestTokens.verifier()) { running in
            let transport = HTTPTransport(url: running.syncURL, token: { source.next(refresh: $0) })
            await #expect { _ = try await transport.send(Self.catchUp, gzip: false) } throws: { error in
                guard let rejected = error as? SyncRequestRejected else { return false }
                return rejected.status == 401 && rejected.code == "unauthenticated" && rejected.message.contains("expired")
            }
            #expect(source.calls.withLock { $0 } == [false, true])
            // Without a callback a 401 is not retried at all.
            await #expect(throws: SyncRequestRejected.self) { _ = try await HTTPTransport(url: running.syncURL).send(Self.catchUp, gzip: false) }
            // SyncClient reports it as a rejection it will not retry by itself.
            let client = SyncClient(store: try Store(.memory, schema: httpTestSchema()), transport: HTTPTransport(url: running.syncURL, token: { _ in expired }))
            let error = await #expect(throws: SyncError.self) { _ = try await client.sync() }
            #expect(error?.code == .rejected && error?.isRetryable == false)
            #expect(running.http.statistics.syncs == 0)
        }
    }
}
