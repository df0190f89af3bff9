import FieldMerge
import Testing

/// Record rules address fields by name (`RecordMergeInput[proposal:]`, `value(_:in:)`).
@Suite struct RecordRuleNameTests {
    static let tickets = Entity("tickets", fields: [Field("title", .text), Field("status", .text), Field("closed", .bool)])

    @Test func aRuleByName_readsAndWritesTheNamedFields() throws {
        // RecordMergeInput+Names.swift block begin
        let closedMeansDone = ClosureRecordStrategy(name: "closedMeansDone") { input in
            var input = input
            if input.value("closed", in: input.remote) == true { input[proposal: "status"] = "done" }
            return input.proposal
        }
        // RecordMergeInput+Names.swift block end
        let stamp = Stamp(clock: 1, replica: ReplicaID(1))
        let local = Record(Self.tickets, id: 1, values: ["a", "open", false], stamp: stamp)
        var remote = local
        remote.values[2] = true
        let input = RecordMergeInput(entity: Self.tickets, ancestor: nil, local: local, remote: remote, proposal: ["a", "open", true])
        #expect(closedMeansDone.merge(input) == ["a", "done", true])
        #expect(closedMeansDone.merge(RecordMergeInput(entity: Self.tickets, ancestor: nil, local: local, remote: local,
                                                       proposal: ["a", "open", false])) == ["a", "open", false])
        #expect(input.index(of: "closed") == 2 && input.index(of: "nope") == nil)
        #expect(input[proposal: "title"] == "a" && input.value("status", in: input.local) == "open")
    }
}
