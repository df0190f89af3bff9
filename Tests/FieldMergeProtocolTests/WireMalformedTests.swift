import FieldMerge
import FieldMergeProtocol
import Testing

/// A request around one record of `things` (or an arbitrary change set body).
private func request(record: String = #""1":{"count":5}"#, entity: String? = nil, top: String = "") -> String {
    let body = entity ?? #""create":[1],"update":[],"delete":[],"attributes":{\#(record)}"#
    return #"{"maxRevision":1,\#(top)"changeSets":[{"types":["things"],"things":{\#(body)}}]}"#
}

@Suite struct WireMalformedTests {
    @Test func wellFormedBaseline_decodes() async throws {
        #expect(try wireCodec.decodeRequest(wireBytes(request())).changeSets[0].entities[0].records[0].values[0] == 5)
    }

    @Test(arguments: [
        // Not JSON.
        ("", WireError.Code.malformedJSON),
        ("   ", .malformedJSON),
        (#"{"maxRevision":1,"#, .malformedJSON),
        (#"{"maxRevision":01,"changeSets":[]}"#, .malformedJSON),
        (#"{"maxRevision":1 "changeSets":[]}"#, .malformedJSON),
        (#"{"maxRevision":1,"changeSets":[]} x"#, .malformedJSON),
        (#"{"maxRevision":1,"changeSets":[]}{}"#, .malformedJSON),
        (#"{"maxRevision":1,"changeSets":[],"x":tru}"#, .malformedJSON),
        (#"{"maxRevision":1,"changeSets":[],"x":[1,]}"#, .malformedJSON),
        (#"{"maxRevision":1,"changeSets":[],"x":-}"#, .malformedJSON),
        (#"{"maxRevision":1,"changeSets":[],"x":1.}"#, .malformedJSON),
        (#"{"maxRevision":1,"changeSets":[],"x":1e}"#, .malformedJSON),
        (#"{"maxRevision":1,"changeSets":[],"x":"\x"}"#, .malformedJSON),
        (#"{"maxRevision":1,"changeSets":[],"x":"\u12G4"}"#, .malformedJSON),
        ("{\"maxRevision\":1,\"changeSets\":[],\"x\":\"tab\there\"}", .malformedJSON),
        (#"{'maxRevision':1,"changeSets":[]}"#, .malformedJSON),
        (request(record: #""1":{"count":5,}"#), .malformedJSON),
        (request(record: #""1":{"score":.5}"#), .malformedJSON),
        (request(record: #""1":{"score":+5}"#), .malformedJSON),
        (request(record: #""1":{"count":NaN}"#), .malformedJSON),
        // Wrong types.
        ("[]", .unexpectedType),
        (#"{"maxRevision":"1","changeSets":[]}"#, .unexpectedType),
        (#"{"maxRevision":1.5,"changeSets":[]}"#, .unexpectedType),
        (#"{"maxRevision":1,"changeSets":{}}"#, .unexpectedType),
        (#"{"maxRevision":1,"changeSets":[],"clientID":7}"#, .unexpectedType),
        (request(entity: #""create":["1"]"#), .unexpectedType),
        (request(entity: #""create":[1.0]"#), .unexpectedType),
        (request(entity: #""create":[1e3]"#), .unexpectedType),
        (request(entity: #""create":{}"#), .unexpectedType),
        (request(record: #""1":{"count":"5"}"#), .unexpectedType),
        (request(record: #""1":{"count":5.5}"#), .unexpectedType),
        (request(record: #""1":{"title":5}"#), .unexpectedType),
        (request(record: #""1":{"done":1}"#), .unexpectedType),
        (request(record: #""1":{"score":"1.5"}"#), .unexpectedType),
        (request(record: #""1":{"due":true}"#), .unexpectedType),
        (request(record: #""1":{"due":1.5}"#), .unexpectedType),
        (request(record: #""1":{"data":[1]}"#), .unexpectedType),
        (request(record: #""1":{"tags":"a"}"#), .unexpectedType),
        (request(record: #""1":{"tags":["a",1]}"#), .unexpectedType),
        (request(record: #""1":{"revision":null}"#), .unexpectedType),
        (request(record: #""1":{"__stamps__":[]}"#), .unexpectedType),
        (request(record: #""1":{"__stamps__":{"count":[1.5,2]}}"#), .unexpectedType),
        (request(record: #""1":[]"#), .unexpectedType),
        // Out of range.
        (request(record: #""1":{"count":9223372036854775808}"#), .outOfRange),
        (request(record: #""1":{"count":-9223372036854775809}"#), .outOfRange),
        (request(record: #""1":{"count":123456789012345678901234567890}"#), .outOfRange),
        (request(record: #""1":{"score":1e400}"#), .outOfRange),
        (request(record: #""1":{"score":-1e309}"#), .outOfRange),
        (request(record: #""1":{"revision":-1}"#), .outOfRange),
        (request(record: #""1":{"due":"999999999-01-01 00:00:00.000+00"}"#), .outOfRange),
        (request(record: #""1":{"__stamps__":{"count":[-1,2]}}"#), .outOfRange),
        (request(record: #""1":{"__stamps__":{"count":[18446744073709551616,2]}}"#), .outOfRange),
        (request(record: #""1":{"__stamps__":{"count":["18446744073709551616",2]}}"#), .outOfRange),
        (request(record: #""99999999999999999999":{}"#), .outOfRange),
        (request(entity: #""delete":[9223372036854775808]"#), .outOfRange),
        (#"{"maxRevision":-1,"changeSets":[]}"#, .outOfRange),
        (#"{"maxRevision":1,"changeSets":[],"limit":0}"#, .outOfRange),
        (#"{"maxRevision":1,"changeSets":[],"limit":2147483648}"#, .outOfRange),
        // Unknown names.
        (#"{"maxRevision":1,"changeSets":[{"types":["nope"]}]}"#, .unknownEntity),
        (#"{"maxRevision":1,"changeSets":[{"types":[],"nope":{}}]}"#, .unknownEntity),
        (#"{"maxRevision":1,"changeSets":[{"types":["things"],"Things":{}}]}"#, .unknownEntity),
        (request(record: #""1":{"nope":1}"#), .unknownField),
        (request(record: #""1":{"id":1}"#), .unknownField),
        (request(record: #""1":{"Count":1}"#), .unknownField),
        (request(record: #""1":{"__stamps__":{"nope":[1,2]}}"#), .unknownField),
        (request(entity: #""creates":[]"#), .unknownField),
        // Invalid values.
        (request(record: #""abc":{}"#), .invalidValue),
        (request(record: #""01":{}"#), .invalidValue),
        (request(record: #""+1":{}"#), .invalidValue),
        (request(record: #""-0":{}"#), .invalidValue),
        (request(record: #""":{}"#), .invalidValue),
        (request(record: #"" 1":{}"#), .invalidValue),
        (request(record: #""1":{"due":"2014-13-01 00:00:00.000+00"}"#), .invalidValue),
        (request(record: #""1":{"due":"2014-02-30 00:00:00.000+00"}"#), .invalidValue),
        (request(record: #""1":{"due":"1900-02-29 00:00:00.000+00"}"#), .invalidValue),
        (request(record: #""1":{"due":"2014-02-01 24:00:00.000+00"}"#), .invalidValue),
        (request(record: #""1":{"due":"2014-02-01 13:15:23.487"}"#), .invalidValue),
        (request(record: #""1":{"due":"2014-02-01 13:15:23.4871+00"}"#), .invalidValue),
        (request(record: #""1":{"due":"2014-02-01 13:15:23.487%2B01"}"#), .invalidValue),
        (request(record: #""1":{"due":"2014-02-01"}"#), .invalidValue),
        (request(record: #""1":{"due":""}"#), .invalidValue),
        (request(record: #""1":{"data":"abc"}"#), .invalidValue),
        (request(record: #""1":{"data":"ab=c"}"#), .invalidValue),
        (request(record: #""1":{"data":"YR=="}"#), .invalidValue),
        (request(record: #""1":{"data":"ab-_"}"#), .invalidValue),
        (request(record: #""1":{"data":"YQ==YQ=="}"#), .invalidValue),
        (request(record: #""1":{"title":"\ud800"}"#), .invalidValue),
        (request(record: #""1":{"title":"\ud800\u0041"}"#), .invalidValue),
        (request(record: #""1":{"title":"\udc00\ud800"}"#), .invalidValue),
        (request(record: #""1":{"__stamps__":{"count":[1]}}"#), .invalidValue),
        (request(record: #""1":{"__stamps__":{"count":[1,2,3]}}"#), .invalidValue),
        (request(record: #""1":{"__stamps__":{"count":[]}}"#), .invalidValue),
        (request(record: #""1":{"__stamps__":{"count":["12a",2]}}"#), .invalidValue),
        (#"{"changeSets":[]}"#, .invalidValue),
        (#"{"maxRevision":1}"#, .invalidValue),
        (#"{"maxRevision":1,"changeSets":[{"things":{}}]}"#, .invalidValue),
        (#"{"maxRevision":1,"changeSets":[{"types":["things"]}]}"#, .invalidValue),
        (#"{"maxRevision":1,"changeSets":[{"types":["notes"],"things":{}}]}"#, .invalidValue),
        // Duplicate keys.
        (#"{"maxRevision":1,"maxRevision":2,"changeSets":[]}"#, .duplicateKey),
        (#"{"maxRevision":1,"changeSets":[],"changeSets":[]}"#, .duplicateKey),
        (#"{"maxRevision":1,"changeSets":[{"types":["things","things"],"things":{}}]}"#, .duplicateKey),
        (#"{"maxRevision":1,"changeSets":[{"types":["things"],"things":{},"things":{}}]}"#, .duplicateKey),
        (#"{"maxRevision":1,"changeSets":[{"types":[],"types":[]}]}"#, .duplicateKey),
        (#"{"maxRevision":1,"changeSets":[{"conflict":true,"conflict":false,"types":[]}]}"#, .duplicateKey),
        (request(entity: #""create":[],"create":[]"#), .duplicateKey),
        (request(record: #""1":{},"1":{}"#), .duplicateKey),
        (request(record: #""1":{},"2":{},"1":{}"#), .duplicateKey),
        (request(record: #""3":{},"1":{},"2":{},"1":{}"#), .duplicateKey),
        (request(record: #""-1":{},"-2":{},"5":{},"-2":{}"#), .duplicateKey),
        (request(record: #""1":{"count":1,"count":2}"#), .duplicateKey),
        (request(record: #""1":{"count":1,"title":"a","\u0063ount":2}"#), .duplicateKey),
        (request(record: #""1":{"revision":1,"revision":1}"#), .duplicateKey),
        (request(record: #""1":{"__oldId__":1,"__oldId__":1}"#), .duplicateKey),
        (request(record: #""1":{"__stamps__":{},"__stamps__":{}}"#), .duplicateKey),
        (request(record: #""1":{"__stamps__":{"count":[1,2],"count":[1,2]}}"#), .duplicateKey),
    ] as [(String, WireError.Code)])
    func malformedRequest_throwsTypedErrorWithOffset(_ json: String, _ code: WireError.Code) {
        let bytes = wireBytes(json)
        #expect {
            try wireCodec.decodeRequest(bytes)
        } throws: { error in
            guard let error = error as? WireError else { return false }
            return error.code == code && (error.offset.map { $0 >= 0 && $0 <= bytes.count } ?? false)
        }
    }

    @Test func errorOffsets_pointAtTheProblem() async throws {
        let json = request(record: #""1":{"count":5,"nope":1}"#)
        let error = try #require(throws: WireError.self) { try wireCodec.decodeRequest(wireBytes(json)) }
        let offset = try #require(error.offset)
        #expect(String(decoding: wireBytes(json)[offset...].prefix(6), as: UTF8.self) == "\"nope\"")
        #expect(error.code == .unknownField)
        let tooBig = request(record: #""1":{"count":99999999999999999999}"#)
        let rangeError = try #require(throws: WireError.self) { try wireCodec.decodeRequest(wireBytes(tooBig)) }
        #expect(wireBytes(tooBig)[rangeError.offset!...].starts(with: wireBytes("99999")))
    }

    @Test(arguments: [
        [0xFF] as [UInt8], [0xC0, 0xAF], [0xE0, 0x80, 0x80], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80],
        [0xC3], [0xE2, 0x82], [0x80], [0xF8, 0x88, 0x80, 0x80, 0x80],
    ])
    func invalidUTF8InAString_isMalformedJSON(_ bad: [UInt8]) {
        let bytes = wireBytes(#"{"maxRevision":1,"changeSets":[],"clientID":"a"#) + bad + wireBytes(#"b"}"#)
        #expect(throws: WireError.self) { _ = try wireCodec.decodeRequest(bytes) }
        do {
            _ = try wireCodec.decodeRequest(bytes)
        } catch {
            #expect(error.code == .malformedJSON)
            #expect(error.offset == 46)
        }
    }

    @Test func nestingBeyondMaxDepth_isTooDeep_evenInSkippedKeys() async throws {
        let deep = String(repeating: "[", count: 40) + String(repeating: "]", count: 40)
        let json = #"{"maxRevision":1,"changeSets":[],"future":\#(deep)}"#
        let error = try #require(throws: WireError.self) { try wireCodec.decodeRequest(wireBytes(json)) }
        #expect(error.code == .tooDeep)
        // 100,000 levels: no stack overflow, the same error.
        let hostile = #"{"x":"# + String(repeating: "[", count: 100_000)
        #expect(throws: WireError(.tooDeep, "nesting deeper than 32", offset: 36)) {
            try wireCodec.decodeRequest(wireBytes(hostile))
        }
        // A limit below what a record needs refuses records.
        var limits = WireLimits()
        limits.maxDepth = 5
        let shallow = WireCodec(schema: wireSchema, limits: limits)
        #expect(throws: WireError.self) { _ = try shallow.decodeRequest(wireBytes(request())) }
        limits.maxDepth = 6
        #expect(try WireCodec(schema: wireSchema, limits: limits).decodeRequest(wireBytes(request())).changeSets.count == 1)
    }

    @Test func bodyBeyondMaxBytes_isTooLarge() async throws {
        var limits = WireLimits()
        limits.maxBytes = 64
        let codec = WireCodec(schema: wireSchema, limits: limits)
        let json = wireBytes(request())
        #expect(json.count > 64)
        #expect(throws: WireError(.tooLarge, "body of \(json.count) bytes exceeds the limit of 64", offset: 64)) {
            try codec.decodeResponse(json)
        }
    }

    @Test func everyTruncationOfAValidDocument_throws() async throws {
        let full = wireCodec.encode(wireExtremesRequest())
        let small = wireCodec.encode(SyncResponse(maxRevision: 9, changeSets: [ChangeSet(entities: [
            EntityChanges(entity: "things", create: [1], records: [
                wireRecord(wireThings, id: 1, [
                    "count": 1, "score": 0.5, "title": "é\n", "done": true, "due": .date(0), "data": .blob([1, 2]),
                    "tags": .textSet(["a"]),
                ], stamps: ["count": Stamp(clock: .max, replica: ReplicaID(1))], revision: 9, oldID: -1),
            ]),
        ], conflict: false)], hasMore: true))
        #expect(try wireCodec.decodeResponse(small).changeSets.count == 1)
        var failures = 0
        for length in 0..<small.count {
            do {
                _ = try wireCodec.decodeResponse(Array(small[..<length]))
            } catch {
                failures += 1
            }
        }
        #expect(failures == small.count)
        // The large document: every byte in its first and last 2 KB, every 251st in between.
        let lengths = Array(0..<2048) + Array(stride(from: 2048, to: full.count - 2048, by: 251))
            + Array((full.count - 2048)..<full.count)
        for length in lengths {
            #expect(throws: WireError.self) { try full.withUnsafeBytes { (buffer) throws(WireError) in
                try wireCodec.decodeRequest(UnsafeRawBufferPointer(rebasing: buffer[..<length]))
            } }
        }
    }

    @Test func randomByteCorruptions_neverCrash_andNeverHalfDecode() {
        let valid = wireCodec.encode(SyncRequest(maxRevision: 5, changeSets: [ChangeSet(entities: [
            EntityChanges(entity: "things", create: [-1, -2], records: [
                wireRecord(wireThings, id: -1, [
                    "count": 12, "score": 0.25, "title": "a\"b\\c", "done": false, "due": .date(1_000),
                    "data": .blob([9, 9, 9]), "parent": -2, "tags": .textSet(["x", "y"]),
                ], stamps: ["count": Stamp(clock: 77, replica: ReplicaID(3))]),
                wireRecord(wireThings, id: -2, ["title": "😀"]),
            ]),
        ])], clientID: "c", requestID: "r", limit: 10))
        var generator = WireRandom(seed: 99)
        let alphabet = wireBytes("{}[]\":,\\-0123456789.eE+ tfnu\u{0}abc") + [0x80, 0xC3, 0xFF]
        var decoded = 0, failed = 0
        for _ in 0..<5_000 {
            var bytes = valid
            for _ in 0...generator.below(3) {
                let position = generator.below(bytes.count)
                switch generator.below(3) {
                case 0: bytes[position] = alphabet[generator.below(alphabet.count)]
                case 1: bytes.remove(at: position)
                default: bytes.insert(alphabet[generator.below(alphabet.count)], at: position)
                }
            }
            do {
                let request = try wireCodec.decodeRequest(bytes)
                // What decodes must encode and decode to itself.
                #expect(try wireCodec.decodeRequest(wireCodec.encode(request)) == request)
                decoded += 1
            } catch {
                failed += 1
            }
        }
        #expect(decoded + failed == 5_000)
        #expect(failed > 2_500)
    }
}
