import FieldMergeProtocol
import Testing

/// The text a device's store keeps its scope holdings in (`ScopeHoldings.storedText`).
@Suite struct ScopeHoldingsTextTests {
    @Test func holdingsBecomeOneCanonicalLine_andComeBackEqual() throws {
        let holdings = ScopeHoldings([
            "project": .ids([42, 3, 42]), "archive": .none, "every.thing-1": .all, "odd name;=%": .ids([-1]),
        ])
        #expect(holdings.storedText == "archive=;every.thing-1=*;odd%20name%3B%3D%25=-1;project=3,42")
        #expect(ScopeHoldings(storedText: holdings.storedText) == holdings)
        #expect(ScopeHoldings().storedText == "")
        #expect(ScopeHoldings(storedText: "") == ScopeHoldings())
        let unicode = ScopeHoldings(["équipe": .all])
        #expect(ScopeHoldings(storedText: unicode.storedText) == unicode)
    }

    @Test(arguments: ["project", "=1", "project=2,1", "project=1,1", "a=1;a=2", "a=x", "a=1,,2", "a%2=1", "a b=1", "a=1;", "%zz=1", "a=*1"])
    func textThatIsNotHoldings_readsAsNone(_ text: String) {
        #expect(ScopeHoldings(storedText: text) == nil)
    }
}
