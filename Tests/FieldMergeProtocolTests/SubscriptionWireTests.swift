import FieldMerge
import FieldMergeProtocol
import Testing

/// `"subscriptions"` and `"priority"` in requests and `"deniedSubscriptions"` in responses
/// (Specs/protocol.md, Specs/scopes.md §6).
@Suite struct SubscriptionWireTests {
    @Test func subscriptionsAndPriorityTravelBothWays() throws {
        let request = SyncRequest(
            maxRevision: 4, changeSets: [], scopes: ScopeHoldings(["project": .some([1])]),
            subscriptions: ScopeHoldings(["project": .ids([42, 7]), "folder": .ids([3])]),
            priority: ScopeHoldings(["project": .ids([42])]))
        let json = String(decoding: wireCodec.encode(request), as: UTF8.self)
        #expect(json.contains(#""subscriptions":{"folder":[3],"project":[7,42]}"#))
        #expect(json.contains(#""priority":{"project":[42]}"#))
        #expect(try wireCodec.decodeRequest(wireBytes(json)) == request)

        let response = SyncResponse(
            maxRevision: 9, changeSets: [], scopes: ScopeHoldings(["project": .some([1, 42])]),
            deniedSubscriptions: ScopeHoldings(["project": .some([7])]))
        let answer = wireCodec.encode(response)
        #expect(String(decoding: answer, as: UTF8.self).contains(#""deniedSubscriptions":{"project":[7]}"#))
        #expect(try wireCodec.decodeResponse(answer) == response)
        // Without any, neither key is written.
        #expect(!String(decoding: wireCodec.encode(SyncRequest(maxRevision: 0, changeSets: [])), as: UTF8.self).contains("subscri"))
    }

    @Test(arguments: [
        (#"{"maxRevision": 0, "changeSets": [], "subscriptions": {"project": "*"}}"#, WireError.Code.invalidValue),
        (#"{"maxRevision": 0, "changeSets": [], "priority": {"project": "*"}}"#, .invalidValue),
        (#"{"maxRevision": 0, "changeSets": [], "subscriptions": {"project": [1]}, "subscriptions": {}}"#, .duplicateKey),
        (#"{"maxRevision": 0, "changeSets": [], "subscriptions": {"project": [1.5]}}"#, .unexpectedType),
        (#"{"maxRevision": 0, "changeSets": [], "subscriptions": ["project"]}"#, .unexpectedType),
    ])
    func badSubscriptionsAreRefused(_ json: String, _ code: WireError.Code) {
        #expect {
            _ = try wireCodec.decodeRequest(wireBytes(json))
        } throws: { error in
            (error as? WireError)?.code == code
        }
    }

    @Test func aDeniedListWithAStarIsRefused() {
        #expect(throws: WireError.self) {
            _ = try wireCodec.decodeResponse(wireBytes(#"{"maxRevision": 1, "changeSets": [], "deniedSubscriptions": {"p": "*"}}"#))
        }
    }
}
