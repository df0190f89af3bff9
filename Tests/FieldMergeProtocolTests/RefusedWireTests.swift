import FieldMerge
import FieldMergeProtocol
import FieldMergeTestSupport
import Testing

@Suite struct RefusedWireTests {
    let codec: WireCodec

    init() throws { codec = WireCodec(schema: try syncSchema()) }

    @Test func refusedRecords_roundTrip() throws {
        let response = SyncResponse(maxRevision: 3, changeSets: [ChangeSet(
            entities: [], conflict: true,
            refused: [RefusedRecord(entity: "lists", id: -1, code: "unauthorized", message: "not \"yours\"")])])
        let json = codec.encode(response)
        #expect(String(decoding: json, as: UTF8.self).contains(#""__refused__":[{"type":"lists","id":-1,"code":"unauthorized""#))
        #expect(try codec.decodeResponse(json) == response)
    }

    @Test(arguments: [
        (#"[{"type":"boards","id":1,"code":"x"}]"#, WireError.Code.unknownEntity),
        (#"[{"type":"lists","id":1}]"#, .invalidValue),
        (#"[{"type":"lists","id":"1","code":"x"}]"#, .unexpectedType),
        (#"{"type":"lists"}"#, .unexpectedType),
    ])
    func malformedRefusals_areRefused(_ refused: String, _ code: WireError.Code) throws {
        let json = #"{"maxRevision":1,"changeSets":[{"conflict":true,"__refused__":"# + refused + #","types":[]}]}"#
        let error = #expect(throws: WireError.self) { try codec.decodeResponse(Array(json.utf8)) }
        #expect(error?.code == code)
    }
}
