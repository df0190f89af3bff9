import FieldMerge
import FieldMergeProtocol
import Testing

/// `"*"` in `__stamps__`: the stamp most fields share, written once.
@Suite struct WireSharedStampTests {
    let a = Stamp(milliseconds: 1_700_000_000_000, replica: ReplicaID(0x5E))
    let b = Stamp(milliseconds: 1_700_000_000_001, replica: ReplicaID(0xA))

    func response(_ stamps: [String: Stamp]) -> SyncResponse {
        let values: [String: Value] = ["count": 1, "title": "x", "done": true, "tags": .textSet(["t"])]
        return SyncResponse(maxRevision: 2, changeSets: [ChangeSet(entities: [EntityChanges(entity: "notes", records: []),
            EntityChanges(entity: "things", update: [7], records: [wireRecord(wireThings, id: 7, values, stamps: stamps, revision: 2)])])])
    }

    func everyField(_ stamp: Stamp) -> [String: Stamp] {
        Dictionary(uniqueKeysWithValues: wireThings.fields.map { ($0.name, stamp) })
    }

    @Test func uniformStampsTravelOnceUnderStar() async throws {
        let original = response(everyField(a))
        let json = String(decoding: wireCodec.encode(original), as: UTF8.self)
        #expect(json.contains(#""__stamps__":{"*":[\#(a.clock),94]}"#))
        #expect(try wireCodec.decodeResponse(Array(json.utf8)) == original)
    }

    @Test func fieldsThatDifferAreNamedBesideTheStar() async throws {
        var stamps = everyField(a)
        stamps["title"] = b
        let original = response(stamps)
        let json = String(decoding: wireCodec.encode(original), as: UTF8.self)
        #expect(json.contains(#""__stamps__":{"*":[\#(a.clock),94],"title":[\#(b.clock),10]}"#))
        #expect(try wireCodec.decodeResponse(Array(json.utf8)) == original)
    }

    @Test func aFieldWithoutStampKeepsEveryFieldNamed() async throws {
        var stamps = everyField(a)
        stamps["title"] = Stamp.none
        let original = response(stamps)
        let json = String(decoding: wireCodec.encode(original), as: UTF8.self)
        #expect(!json.contains(#""*""#))
        #expect(try wireCodec.decodeResponse(Array(json.utf8)) == original)
    }

    @Test func starAppliesOnlyToFieldsNotNamed_inAnyOrder() async throws {
        let json = #"{"maxRevision":1,"changeSets":[{"types":["notes"],"notes":{"create":[],"update":[3],"delete":[],"#
            + #""attributes":{"3":{"body":"x","__stamps__":{"body":[5,1],"*":[9,2]}}}}}]}"#
        let response = try wireCodec.decodeResponse(Array(json.utf8))
        #expect(response.changeSets[0].entities[0].records[0].stamps == [Stamp(clock: 5, replica: ReplicaID(1))])
        let things = #"{"maxRevision":1,"changeSets":[{"types":["things"],"things":{"create":[],"update":[3],"delete":[],"#
            + #""attributes":{"3":{"count":1,"__stamps__":{"title":[5,1],"*":[9,2]}}}}}]}"#
        let stamps = try #require(try wireCodec.decodeResponse(Array(things.utf8)).changeSets[0].entities[0].records[0].stamps)
        #expect(stamps[wireThings.fieldIndex("title")!] == Stamp(clock: 5, replica: ReplicaID(1)))
        #expect(stamps.filter { $0 == Stamp(clock: 9, replica: ReplicaID(2)) }.count == wireThings.fields.count - 1)
    }

    @Test func aSecondStarIsRefused() async throws {
        let json = #"{"maxRevision":1,"changeSets":[{"types":["notes"],"notes":{"create":[],"update":[3],"delete":[],"#
            + #""attributes":{"3":{"body":"x","__stamps__":{"*":[5,1],"*":[9,2]}}}}}]}"#
        #expect(throws: WireError.self) { try wireCodec.decodeResponse(Array(json.utf8)) }
    }
}
