import FieldMerge
import FieldMergeProtocol
import FieldMergeSQLite
@testable import FieldMergeSync
import FieldMergeTestSupport
import Testing

/// A catch-up page asked for ahead is used only if the store then stands at the revision and
/// the holdings it was asked with.
@Suite struct ScopePrefetchTests {
    typealias S = Scripted

    /// Three pages of one list each; page 2 holds `second`, and the answer to the request
    /// for page 3 names list 3 after the holdings that request carried.
    static func pages(second: ScopeHoldings) throws -> ScriptedTransport {
        try ScriptedTransport(schema: syncSchema()) { request in
            switch request.maxRevision {
            case 0:
                return SyncResponse(maxRevision: 1, changeSets: [S.created(lists: [S.list(1, "one", revision: 1)])],
                                    hasMore: true, scopes: S.holdings(1))
            case 1:
                return SyncResponse(maxRevision: 2, changeSets: [S.created(lists: [S.list(2, "two", revision: 2)])],
                                    hasMore: true, scopes: second)
            default:
                let name = request.scopes == second ? "asked right" : "asked with stale holdings"
                return SyncResponse(maxRevision: 3, changeSets: [S.created(lists: [S.list(3, name, revision: 3)])], scopes: second)
            }
        }
    }

    static func name(_ client: SyncClient, list id: Int64) async throws -> String? {
        try await client.withStore { store in
            guard case .text(let name)? = try store.record("lists", id: id)?.values[0] else { return nil }
            return name
        }
    }

    @Test func aPageAskedAheadWithHoldingsThatChangedSince_isDroppedAndAskedAgain() async throws {
        let transport = try Self.pages(second: S.holdings(1, 2))
        let client = try S.client(transport)
        let summary = try await client.sync()
        #expect(try await Self.name(client, list: 3) == "asked right")
        #expect(summary.rounds == 3)
        #expect(await client.withStore { $0.scopeState } == S.holdings(1, 2).storedText)
        // Page 3 was asked for on page 2's head with the holdings of page 1 (that request is
        // dropped, whenever it arrives), then again with page 2's.
        #expect(transport.requests.contains { $0.maxRevision == 2 && $0.scopes == S.holdings(1, 2) })
    }

    @Test func pagesAskedAheadWithTheHoldingsTheyNeed_areUsedAsTheyAre() async throws {
        let transport = try Self.pages(second: S.holdings(1))
        let client = try S.client(transport)
        _ = try await client.sync()
        #expect(try await Self.name(client, list: 3) == "asked right")
        #expect(transport.requests.map(\.maxRevision) == [0, 1, 2])
        #expect(transport.requests.map(\.scopes) == [nil, S.holdings(1), S.holdings(1)])
    }
}
