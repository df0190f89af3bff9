import FieldMerge
import FieldMergeProtocol
import Foundation
import Testing

@Suite struct WireCodecTests {
    @Test func requestWithEveryValueTypeAndExtremes_roundTrips() async throws {
        let request = wireExtremesRequest()
        let encoded = wireCodec.encode(request)
        let decoded = try wireCodec.decodeRequest(encoded)
        #expect(decoded == request)
        // Spot checks that equality did not pass vacuously.
        let things = decoded.changeSets[0].entities[1]
        #expect(things.entity == "things")
        #expect(things.records[0].values[1].description == "-0.0")
        #expect(things.records[0].stamps?[0] == Stamp(clock: .max, replica: ReplicaID(.max)))
        #expect(things.records[2].stamps == ContiguousArray(repeating: .none, count: 8))
        #expect(things.records[3].stamps == nil)
        #expect(things.records[5].present.isEmpty)
        // The same through the raw-buffer entry point.
        let viaBuffer = try encoded.withUnsafeBytes { (buffer) throws(WireError) in try wireCodec.decodeRequest(buffer) }
        #expect(viaBuffer == request)
    }

    @Test func responseWithConflictFlagsAndHasMore_roundTrips() async throws {
        let record = wireRecord(wireThings, id: 321, ["count": 1, "title": "x"], revision: 1001, oldID: -10)
        let response = SyncResponse(maxRevision: 1001, changeSets: [
            ChangeSet(entities: [EntityChanges(entity: "things", update: [7], records: [
                wireRecord(wireThings, id: 7, ["done": true], revision: 999),
            ])]),
            ChangeSet(entities: [EntityChanges(entity: "things", create: [321], records: [record])], conflict: false),
            ChangeSet(entities: [EntityChanges(entity: "notes", delete: [9])], conflict: true),
        ], hasMore: true)
        let encoded = wireCodec.encode(response)
        let decoded = try wireCodec.decodeResponse(encoded)
        #expect(decoded == response)
        #expect(decoded.changeSets.map(\.conflict) == [nil, false, true])
        let text = String(decoding: encoded, as: UTF8.self)
        #expect(text.hasPrefix("{\"maxRevision\":1001,\"hasMore\":true,\"changeSets\":[{\"types\":[\"things\"]"))
        #expect(text.contains("\"321\":{\"__oldId__\":-10,\"revision\":1001,\"count\":1,\"title\":\"x\"}"))
    }

    @Test func caseStudyRequestFromProtocolDoc_decodesToModel() async throws {
        let json = """
            { "maxRevision": 1000,
              "changeSets": [
                { "types": ["screen_instances", "screen_instance_items"],
                  "screen_instances": {
                    "create": [-10], "update": [], "delete": [],
                    "attributes": { "-10": { "screen_id": 749, "date": "2014-02-01 13:15:23.487+01", "comment": "" } } },
                  "screen_instance_items": {
                    "create": [-11, -12], "update": [], "delete": [],
                    "attributes": { "-11": { "screen_instance_id": -10, "numeric_value": 2 }, "-12": { } } } } ] }
            """
        let codec = WireCodec(schema: wireCaseStudySchema)
        let request = try codec.decodeRequest(wireBytes(json))
        #expect(request.maxRevision == 1000)
        #expect(request.clientID == nil && request.requestID == nil && request.limit == nil)
        #expect(request.changeSets.count == 1)
        let changeSet = request.changeSets[0]
        #expect(changeSet.conflict == nil)
        #expect(changeSet.entities.map(\.entity) == ["screen_instances", "screen_instance_items"])
        let instances = changeSet.entities[0], items = changeSet.entities[1]
        #expect(instances.create == [-10] && instances.update.isEmpty && instances.delete.isEmpty)
        #expect(instances.records == [
            WireRecord(id: -10, present: FieldMask([0, 1, 2]), values: [.integer(749), .date(1_391_256_923_487), .text("")]),
        ])
        #expect(items.create == [-11, -12])
        #expect(items.records == [
            WireRecord(id: -11, present: FieldMask([0, 1]), values: [.integer(-10), .integer(2)]),
            WireRecord(id: -12, present: FieldMask(), values: [.null, .null]),
        ])
        // Re-encoded and read again: the same model; the date now in UTC.
        let again = codec.encode(request)
        #expect(try codec.decodeRequest(again) == request)
        #expect(String(decoding: again, as: UTF8.self).contains("\"date\":\"2014-02-01 12:15:23.487+00\""))
    }

    @Test func caseStudyResponseWithOldIdAndConflict_decodes() async throws {
        let json = """
            { "maxRevision": 1001,
              "changeSets": [
                { "conflict": false,
                  "types": [ "screen_instances", "screen_instance_items" ],
                  "screen_instances": { "create": [ 321 ], "update": [], "delete": [],
                    "attributes": { "321": { "__oldId__": -10, "revision": 1001, "screen_id": 749,
                                             "date": "2014-02-01 13:15:23.487+01", "comment": "" } } },
                  "screen_instance_items": { "create": [ 412, 413 ], "update": [], "delete": [],
                    "attributes": { "412": { "__oldId__": -11, "revision": 1001, "screen_instance_id": 321, "numeric_value": 2 },
                                    "413": { "__oldId__": -12, "revision": 1001 } } } },
                { "screen_instances": { "create": [], "update": [ 5 ], "delete": [ 6 ],
                    "attributes": { "5": { "revision": 990, "comment": "theirs" }, "6": { "revision": 991 } } },
                  "types": [ "screen_instances" ], "conflict": true } ] }
            """
        let codec = WireCodec(schema: wireCaseStudySchema)
        let response = try codec.decodeResponse(wireBytes(json))
        #expect(response.maxRevision == 1001 && !response.hasMore)
        #expect(response.changeSets.map(\.conflict) == [false, true])
        let confirmed = response.changeSets[0].entities
        #expect(confirmed[0].records[0] == WireRecord(
            id: 321, present: FieldMask([0, 1, 2]), values: [749, .date(1_391_256_923_487), ""], revision: 1001, oldID: -10))
        #expect(confirmed[1].records.map(\.oldID) == [-11, -12])
        #expect(confirmed[1].records[0].values[0] == .integer(321))
        let conflict = response.changeSets[1].entities[0]
        #expect(conflict.update == [5] && conflict.delete == [6])
        #expect(conflict.records.map(\.revision) == [990, 991])
        #expect(conflict.records[0].values == [.null, .null, "theirs"] && conflict.records[0].present == FieldMask([2]))
    }

    @Test func encodedRequest_isJSONThatFoundationReadsAlike() async throws {
        let request = wireExtremesRequest()
        let encoded = wireCodec.encode(request)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(encoded)) as? [String: Any])
        #expect((object["maxRevision"] as? NSNumber)?.int64Value == 1000)
        #expect(object["clientID"] as? String == request.clientID)
        #expect(object["requestID"] as? String == request.requestID)
        #expect((object["limit"] as? NSNumber)?.intValue == request.limit)
        let changeSets = try #require(object["changeSets"] as? [[String: Any]])
        #expect(changeSets.count == 2)
        #expect(changeSets[0]["types"] as? [String] == ["notes", "things"])
        #expect(changeSets[1]["types"] as? [String] == [])
        let things = try #require(changeSets[0]["things"] as? [String: Any])
        #expect((things["create"] as? [NSNumber])?.map(\.int64Value) == [-1, .min])
        let attributes = try #require(things["attributes"] as? [String: [String: Any]])
        let model = request.changeSets[0].entities[1].records
        #expect(Set(attributes.keys) == Set(model.map { String($0.id) }))
        for record in model {
            let json = try #require(attributes[String(record.id)])
            var expectedKeys = Set(record.present.map { wireThings.fields[$0].name })
            if record.stamps != nil { expectedKeys.insert("__stamps__") }
            if record.revision != nil { expectedKeys.insert("revision") }
            if record.oldID != nil { expectedKeys.insert("__oldId__") }
            #expect(Set(json.keys) == expectedKeys)
            for index in record.present {
                let field = wireThings.fields[index]
                let foundation = json[field.name]
                switch record.values[index] {
                case .null: #expect(foundation is NSNull)
                case .integer(let v): #expect((foundation as? NSNumber)?.int64Value == v, "\(field.name)")
                case .real(let v): #expect((foundation as? NSNumber)?.doubleValue.bitPattern == v.bitPattern, "\(v)")
                case .text(let v): #expect((foundation as? String).map { Array($0.utf8) } == Array(v.utf8))
                case .bool(let v): #expect((foundation as? NSNumber)?.boolValue == v)
                case .date: #expect(foundation is String)
                case .blob(let v): #expect((foundation as? String).flatMap { Data(base64Encoded: $0) } == Data(v))
                case .textSet(let v): #expect(foundation as? [String] == v.elements)
                }
            }
            if let stamps = record.stamps {
                let json = try #require(json["__stamps__"] as? [String: [Any]])
                #expect(json.count == stamps.filter { !$0.isNone }.count)
                for (index, stamp) in stamps.enumerated() where !stamp.isNone {
                    let parts = try #require(json[wireThings.fields[index].name])
                    let clock = (parts[0] as? NSNumber)?.uint64Value ?? (parts[0] as? String).flatMap { UInt64($0) }
                    #expect(clock == stamp.clock)
                }
            }
        }
    }

    @Test func encodedErrorBody_roundTripsAndIsJSON() async throws {
        let body = WireErrorBody(WireError(.tooLarge, "body of 300 MB \"exceeds\" the limit", offset: 268_435_456))
        let encoded = wireCodec.encode(body)
        #expect(try wireCodec.decodeError(encoded) == body)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(encoded)) as? [String: String])
        #expect(object == ["error": "tooLarge", "message": "tooLarge at byte 268435456: body of 300 MB \"exceeds\" the limit"])
    }

    @Test func unknownTopLevelKeys_areSkipped() async throws {
        let json = """
            {"future": {"nested": [1, 2.5e3, "s\\u00e9", true, false, null, {"a": []}]}, "maxRevision": 3,
             "hasMore": true, "changeSets": [], "limit": null, "x": [[[[]]]], "clientID": "c"}
            """
        let request = try wireCodec.decodeRequest(wireBytes(json))
        #expect(request == SyncRequest(maxRevision: 3, changeSets: [], clientID: "c"))
    }

    @Test(arguments: [
        ("2014-02-01 13:15:23.487+01", 1_391_256_923_487),
        ("2014-02-01T12:15:23.487Z", 1_391_256_923_487),
        ("2014-02-01 14:45:23.487+02:30", 1_391_256_923_487),
        ("2014-02-01 07:15:23.487-05", 1_391_256_923_487),
        ("2014-02-01 12:15:23+00", 1_391_256_923_000),
        ("2014-02-01 12:15:23.4Z", 1_391_256_923_400),
        ("1970-01-01 00:00:00.000+00", 0),
        ("1969-12-31 23:59:59.999+00", -1),
        ("0001-01-01 00:00:00.000+00", -62_135_596_800_000),
        ("-0001-12-31 23:59:59.999+00", -62_167_219_200_001),
        ("2000-02-29 00:00:00.000+00", 951_782_400_000),
        ("10000-01-01 00:00:00.000+00", 253_402_300_800_000),
    ] as [(String, Int64)])
    func dateStrings_decodeToMilliseconds(_ text: String, _ milliseconds: Int64) throws {
        let decoded = try decodeDate("\"\(text)\"")
        #expect(decoded == milliseconds)
    }

    @Test func dates_areWrittenInUTCWithMilliseconds_andIntegersAccepted() async throws {
        #expect(try encodeDate(1_391_256_923_487) == "\"2014-02-01 12:15:23.487+00\"")
        #expect(try encodeDate(-1) == "\"1969-12-31 23:59:59.999+00\"")
        #expect(try encodeDate(-62_167_219_200_001) == "\"-0001-12-31 23:59:59.999+00\"")
        #expect(try encodeDate(253_402_300_800_000) == "\"10000-01-01 00:00:00.000+00\"")
        #expect(try decodeDate("1391256923487") == 1_391_256_923_487)
        #expect(try decodeDate("-5") == -5)
        for extreme in [Int64.min, .max, .min + 1, .max - 1, -86_400_000, 86_399_999] {
            #expect(try decodeDate(try encodeDate(extreme)) == extreme)
        }
    }

    @Test func surrogatePairEscapes_decodeToOneScalar() async throws {
        let json = #"{"maxRevision":0,"changeSets":[{"types":["notes"],"notes":{"attributes":{"1":{"body":"\ud83d\ude00 \u00e9\u0000\/"}}}}]}"#
        let request = try wireCodec.decodeRequest(wireBytes(json))
        #expect(request.changeSets[0].entities[0].records[0].values[0] == .text("😀 é\u{0}/"))
    }

    @Test func reals_roundTripExactlyThroughFastAndSlowPaths() async throws {
        var generator = WireRandom(seed: 7)
        var values: [Double] = [0.1, 0.2, 0.3, 1.0 / 3, 2.0 / 3, 1e22, 1e23, 0x1p53, 0x1p53 + 2, 123456789012345680,
                                .leastNonzeroMagnitude, .leastNormalMagnitude, Double.leastNormalMagnitude.nextDown,
                                .greatestFiniteMagnitude, 0.6651594107997011]
        for _ in 0..<3_000 {
            let bits = Double(bitPattern: generator.next())
            if bits.isFinite { values.append(bits) }
            values.append(Double(generator.next() >> 11) * 0x1p-53)
        }
        let records = values.enumerated().map { index, value in
            wireRecord(wireThings, id: Int64(index), ["score": .real(value)])
        }
        let request = SyncRequest(maxRevision: 0, changeSets: [
            ChangeSet(entities: [EntityChanges(entity: "things", records: records)]),
        ])
        let decoded = try wireCodec.decodeRequest(wireCodec.encode(request))
        #expect(decoded == request)
        // Other spellings of numbers read as reals too.
        for (text, value) in [("2", 2.0), ("-0", -0.0), ("1E2", 100.0), ("1.5e-3", 0.0015), ("0.000001", 1e-6),
                              ("12345678901234567890123", 1.2345678901234568e22), ("1e-400", 0.0)] {
            let json = #"{"maxRevision":0,"changeSets":[{"types":["things"],"things":{"attributes":{"1":{"score":\#(text)}}}}]}"#
            let score = try wireCodec.decodeRequest(wireBytes(json)).changeSets[0].entities[0].records[0].values[1]
            #expect(score == .real(value), "\(text)")
        }
    }

    private func decodeDate(_ json: String) throws -> Int64? {
        let text = #"{"maxRevision":0,"changeSets":[{"types":["things"],"things":{"attributes":{"1":{"due":\#(json)}}}}]}"#
        let value = try wireCodec.decodeRequest(wireBytes(text)).changeSets[0].entities[0].records[0].values[4]
        guard case .date(let milliseconds) = value else { return nil }
        return milliseconds
    }

    private func encodeDate(_ milliseconds: Int64) throws -> String {
        let request = SyncRequest(maxRevision: 0, changeSets: [ChangeSet(entities: [
            EntityChanges(entity: "things", records: [wireRecord(wireThings, id: 1, ["due": .date(milliseconds)])]),
        ])])
        let text = String(decoding: wireCodec.encode(request), as: UTF8.self)
        let start = try #require(text.range(of: "\"due\":"))
        return String(text[start.upperBound...].prefix { $0 != "}" })
    }
}
