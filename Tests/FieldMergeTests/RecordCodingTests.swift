import FieldMerge
import FieldMergeWorkload
import Testing

/// The workload's seeded SplitMix64, so that every random test replays identically.
typealias CodingRandom = SplitMix64

extension SplitMix64 {
    /// Small, extreme and arbitrary integers alike.
    mutating func int64() -> Int64 {
        switch below(5) {
        case 0: return Int64(below(256)) - 128
        case 1: return [Int64.min, Int64.max, 0, -1, 1, Int64.min + 1, Int64.max - 1][below(7)]
        case 2: return Int64(below(1 << 20))
        default: return Int64(bitPattern: next())
        }
    }

    mutating func real() -> Double {
        switch below(4) {
        case 0: return [0.0, -0.0, .infinity, -.infinity, .nan, -.nan, .leastNonzeroMagnitude, .greatestFiniteMagnitude][below(8)]
        case 1: return Double(bitPattern: next())  // any bit pattern, NaN payloads included
        default: return Double(int64()) / 7
        }
    }

    mutating func text(maxLength: Int = 12) -> String {
        let pieces = ["a", "Z", " ", "\0", "é", "e\u{301}", "日本", "𝄞", "🇫🇷", "\u{FFFD}", "\n", "\u{7F}"]
        return (0..<below(maxLength + 1)).map { _ in pieces[below(pieces.count)] }.joined()
    }

    mutating func bytes(maxLength: Int = 40) -> [UInt8] {
        (0..<below(maxLength + 1)).map { _ in UInt8(truncatingIfNeeded: next()) }
    }

    mutating func value(for type: FieldType) -> Value {
        if below(6) == 0 { return .null }
        switch type {
        case .integer, .reference: return .integer(int64())
        case .real: return .real(real())
        case .text: return .text(text())
        case .bool: return .bool(below(2) == 0)
        case .date: return .date(int64())
        case .blob: return .blob(bytes())
        case .textSet: return .textSet(TextSet((0..<below(6)).map { _ in text(maxLength: 4) }))
        case .attachment: return .text("sha256:\(String(repeating: "0", count: 64));\(below(1000));image/png")
        }
    }

    /// Stamps like real ones (runs, one replica, close clocks) mixed with extremes.
    mutating func stamp(after previous: Stamp) -> Stamp {
        switch below(8) {
        case 0, 1: return previous
        case 2: return .none
        case 3:
            return Stamp(clock: UInt64.max - UInt64(below(3)), replica: ReplicaID(UInt64.max - UInt64(below(3))))
        case 4: return Stamp(clock: next(), replica: ReplicaID(next()))
        case 5: return Stamp(clock: previous.clock &- UInt64(below(1 << 20)), replica: previous.replica)
        default:
            return Stamp(clock: previous.clock &+ UInt64(below(1 << 30)), replica: below(4) == 0 ? ReplicaID(UInt64(below(5))) : previous.replica)
        }
    }

    mutating func stamps(_ count: Int) -> ContiguousArray<Stamp> {
        var previous = Stamp(milliseconds: 1_763_000_000_000, replica: ReplicaID(next()))
        var stamps = ContiguousArray<Stamp>()
        for _ in 0..<count {
            previous = stamp(after: previous)
            stamps.append(previous)
        }
        return stamps
    }

    mutating func record(_ entity: Entity) -> Record {
        var stamps = stamps(entity.fields.count + 1)
        let last = stamps.removeLast()
        return Record(
            entity: entity.name, id: 7, values: ContiguousArray(entity.fields.map { value(for: $0.type) }),
            stamps: stamps, tombstone: below(3) == 0 ? last : nil)
    }
}

/// One field of every type.
private let codedEntity = Entity(
    "coded",
    fields: [
        Field("count", .integer), Field("score", .real), Field("title", .text), Field("done", .bool),
        Field("due", .date), Field("data", .blob), Field("parent", .reference(to: "coded", onDelete: .setNull)),
        Field("tags", .textSet),
    ])

private let codedStamp = Stamp(milliseconds: 1_763_000_000_123, counter: 2, replica: ReplicaID(0xDEAD_BEEF_CAFE_F00D))

private func encoded(_ record: Record, revision: Int64 = 1, entity: Entity = codedEntity) -> [UInt8] {
    var buffer: [UInt8] = []
    RecordCoding.encodeAncestor(record, revision: revision, entity: entity, into: &buffer)
    return buffer
}

private func decoded(_ bytes: [UInt8], entity: Entity = codedEntity) throws(RecordCodingError) -> (record: Record, revision: Int64) {
    let result = bytes.withUnsafeBytes { raw in
        Result { () throws(RecordCodingError) in try RecordCoding.decodeAncestor(raw, entity: entity, id: 7) }
    }
    return try result.get()
}

private func encodedStamps(_ stamps: some Collection<Stamp>) -> [UInt8] {
    var buffer: [UInt8] = []
    RecordCoding.encodeStamps(stamps, into: &buffer)
    return buffer
}

private func decodedStamps(_ bytes: [UInt8], count: Int) throws(RecordCodingError) -> ContiguousArray<Stamp> {
    let result = bytes.withUnsafeBytes { raw in
        Result { () throws(RecordCodingError) in try RecordCoding.decodeStamps(raw, count: count) }
    }
    return try result.get()
}

/// A record of ``codedEntity`` holding `value` in field `field` and null elsewhere.
private func codedRecord(_ field: Int, _ value: Value, tombstone: Stamp? = nil) -> Record {
    var values = ContiguousArray<Value>(repeating: .null, count: codedEntity.fields.count)
    values[field] = value
    var record = Record(codedEntity, id: 7, values: values, stamp: codedStamp)
    record.tombstone = tombstone
    return record
}

/// Decodes `bytes` (the ancestor encoding of one text field `text`) built by hand.
private func decodedText(_ utf8: [UInt8]) throws(RecordCodingError) -> String {
    precondition(utf8.count < 128)
    let entity = Entity("texts", fields: [Field("text", .text)])
    let bytes: [UInt8] = [1, 0, 0, 0x03, UInt8(utf8.count)] + utf8 + [0x00]
    guard case .text(let text) = try decoded(bytes, entity: entity).record.values[0] else {
        preconditionFailure("a text field decoded to another kind")
    }
    return text
}

@Suite struct RecordCodingTests {
    // MARK: Round trips

    @Test func everyValueKind_roundTripsExactly() throws {
        let samples: [(Int, Value)] = [
            (0, .null), (0, .integer(0)), (0, .integer(Int64.min)), (0, .integer(Int64.max)), (0, .integer(-1)),
            (1, .real(0)), (1, .real(-0.0)), (1, .real(.infinity)), (1, .real(-.infinity)),
            (1, .real(.leastNonzeroMagnitude)), (1, .real(.greatestFiniteMagnitude)), (1, .real(.pi)),
            (1, .real(Double(bitPattern: 0x7FF8_0000_0000_1234))), (1, .real(Double(bitPattern: 0xFFF0_0000_0000_0001))),
            (2, .text("")), (2, .text("Buy milk")), (2, .text("a\0b\0")), (2, .text("e\u{301} é 日本 𝄞 🇫🇷")),
            (3, .bool(false)), (3, .bool(true)), (3, .null),
            (4, .date(0)), (4, .date(Int64.min)), (4, .date(Int64.max)), (4, .date(1_763_000_000_123)),
            (5, .blob([])), (5, .blob(Array(0...255))),
            (6, .integer(42)), (6, .integer(-9)), (6, .null),
            (7, .textSet([])), (7, .textSet(["", "b", "a", "é", "e\u{301}", "\0"])),
        ]
        for (field, value) in samples {
            let record = codedRecord(field, value)
            let result = try decoded(encoded(record))
            #expect(result.record == record, "\(value)")
            if case .real(let original) = value, case .real(let back) = result.record.values[field] {
                #expect(back.bitPattern == original.bitPattern)
            }
        }
    }

    @Test func reals_keepNaNPayloadsAndNegativeZero() throws {
        for bits: UInt64 in [0x8000_0000_0000_0000, 0x7FF8_0000_0000_0000, 0x7FF0_0000_0000_0001, 0xFFFF_FFFF_FFFF_FFFF, 0x7FF8_DEAD_BEEF_0001] {
            let result = try decoded(encoded(codedRecord(1, .real(Double(bitPattern: bits)))))
            guard case .real(let back) = result.record.values[1] else { Issue.record("not a real"); continue }
            #expect(back.bitPattern == bits)
        }
    }

    @Test func text_isByteExact_fromEmptyToOneMegabyte() throws {
        let megabyte = String(repeating: "x\u{E9}\0\u{1F600}", count: 1 << 17)  // 8 bytes a round: 1 MiB
        #expect(megabyte.utf8.count == 1 << 20)
        let precomposed = "caf\u{E9}", decomposed = "cafe\u{301}"
        for text in ["", "\0", "a\0b", megabyte, precomposed, decomposed, "\u{FEFF}bom", "\u{10FFFF}"] {
            let result = try decoded(encoded(codedRecord(2, .text(text))))
            guard case .text(let back) = result.record.values[2] else { Issue.record("not text"); continue }
            #expect(back.utf8.elementsEqual(text.utf8))
        }
        // Canonically equivalent texts stay different.
        let back = try decoded(encoded(codedRecord(2, .text(decomposed)))).record.values[2]
        #expect(back != .text(precomposed))
    }

    @Test func blobs_emptyAndLarge() throws {
        var random = CodingRandom(seed: 1)
        let large = (0..<(1 << 20) + 3).map { _ in UInt8(truncatingIfNeeded: random.next()) }
        for blob in [[], [0], Array(0...255), large] {
            let record = codedRecord(5, .blob(blob))
            #expect(try decoded(encoded(record)).record == record)
        }
    }

    @Test func textSets_emptyAndLarge() throws {
        let large = TextSet((0..<10_000).map { "member \($0) \u{E9}" } + ["", "\0", "𝄞"])
        #expect(large.count == 10_003)
        for set in [TextSet([]), TextSet([""]), TextSet(["z", "a", "é", "e\u{301}"]), large] {
            let record = codedRecord(7, .textSet(set))
            #expect(try decoded(encoded(record)).record == record)
        }
    }

    @Test func tombstoneAndRevision_roundTrip() throws {
        let tombstones: [Stamp?] = [
            nil, codedStamp, Stamp.none, Stamp(clock: UInt64.max, replica: ReplicaID(UInt64.max)),
            Stamp(clock: codedStamp.clock + 1, replica: codedStamp.replica),
        ]
        for tombstone in tombstones {
            for revision in [Int64.min, -1, 0, 1, 1 << 40, Int64.max] {
                let record = codedRecord(2, .text("gone"), tombstone: tombstone)
                let result = try decoded(encoded(record, revision: revision))
                #expect(result.record == record)
                #expect(result.record.tombstone == tombstone)
                #expect(result.revision == revision)
            }
        }
    }

    @Test func decodedRecord_takesTheEntityNameAndGivenId() throws {
        let bytes = encoded(codedRecord(0, .integer(5)))
        let result = try bytes.withUnsafeBytes { try RecordCoding.decodeAncestor($0, entity: codedEntity, id: -12) }
        #expect(result.record.id == -12)
        #expect(result.record.entity == "coded")
    }

    @Test func stamps_extremesRoundTrip() throws {
        let near = UInt64.max
        let lists: [[Stamp]] = [
            [], [.none], [.none, .none, .none],
            [Stamp(clock: near, replica: ReplicaID(near))],
            [Stamp(clock: near - 1, replica: ReplicaID(near)), Stamp(clock: near, replica: ReplicaID(near - 1)), .none],
            [Stamp(clock: 0, replica: ReplicaID(near)), Stamp(clock: near, replica: ReplicaID(0)), Stamp(clock: 1, replica: ReplicaID(1))],
            [Stamp(clock: 0xFFFF, replica: ReplicaID(1)), Stamp(clock: 0x1_0000, replica: ReplicaID(1)), Stamp(clock: 0xFFFF_FFFF_FFFF_0000, replica: ReplicaID(1))],
            Array(repeating: codedStamp, count: 64),
        ]
        for stamps in lists {
            #expect(try decodedStamps(encodedStamps(stamps), count: stamps.count) == ContiguousArray(stamps))
        }
    }

    @Test func encode_appendsToTheBuffer() throws {
        var buffer: [UInt8] = [0xAA, 0xBB]
        RecordCoding.encodeStamps([codedStamp], into: &buffer)
        RecordCoding.encodeAncestor(codedRecord(0, .integer(1)), revision: 3, entity: codedEntity, into: &buffer)
        #expect(Array(buffer.prefix(2)) == [0xAA, 0xBB])
        let stampBytes = encodedStamps([codedStamp])
        #expect(Array(buffer[2..<(2 + stampBytes.count)]) == stampBytes)
        #expect(Array(buffer[(2 + stampBytes.count)...]) == encoded(codedRecord(0, .integer(1)), revision: 3))
    }

    @Test func randomRecords_roundTrip() throws {
        var random = CodingRandom(seed: 0x5EED)
        for _ in 0..<2_000 {
            let record = random.record(codedEntity)
            let revision = random.int64()
            let bytes = encoded(record, revision: revision)
            let result = try decoded(bytes)
            #expect(result.record == record)
            #expect(result.revision == revision)
            let stamps = random.stamps(random.below(20))
            #expect(try decodedStamps(encodedStamps(stamps), count: stamps.count) == stamps)
        }
    }

    // MARK: Sizes

    @Test func equalStamps_takeAFewBytes() {
        // 8 equal stamps are one run: version 1 + control 1 + replica ≤ 10 + milliseconds ≤ 7
        // (zigzag of a 48-bit difference) + counter ≤ 3 (0...65535) = 22 at worst.
        let worst = Stamp(clock: UInt64.max, replica: ReplicaID(UInt64.max))
        #expect(encodedStamps(Array(repeating: worst, count: 8)).count <= 22)
        // Today's clock (41-bit milliseconds: 6 bytes), counter 0, a random 64-bit replica: 18.
        let today = Stamp(milliseconds: 1_763_000_000_123, replica: ReplicaID(0xDEAD_BEEF_CAFE_F00D))
        #expect(encodedStamps(Array(repeating: today, count: 8)).count == 18)
        #expect(encodedStamps(Array(repeating: Stamp.none, count: 8)).count == 2)
        // Stamps a second apart on one replica cost about 3 bytes each after the first.
        let apart = (0..<8).map { Stamp(milliseconds: 1_763_000_000_123 + UInt64($0) * 1_000, replica: today.replica) }
        #expect(encodedStamps(apart).count <= 18 + 7 * 4)
    }

    // MARK: Malformed input

    @Test func everyTruncation_throws() {
        let tombstone = Stamp(clock: codedStamp.clock + (5 << 16), replica: ReplicaID(3))
        let values: ContiguousArray<Value> = [
            .integer(-300), .real(-0.0), .text("héllo\0"), .bool(true), .date(1_763_000_000_123), .blob([1, 2, 3]),
            .integer(Int64.max), .textSet(["a", "bé"]),
        ]
        var record = Record(codedEntity, id: 7, values: values, stamp: codedStamp)
        record.stamps[3] = Stamp(clock: UInt64.max, replica: ReplicaID(UInt64.max))
        record.tombstone = tombstone
        let bytes = encoded(record, revision: Int64.min)
        for length in 0..<bytes.count {
            let error = #expect(throws: RecordCodingError.self) { try decoded(Array(bytes.prefix(length))) }
            #expect((error?.offset ?? -1) <= length)
        }
        let stampBytes = encodedStamps(record.stamps)
        for length in 0..<stampBytes.count {
            #expect(throws: RecordCodingError.self) { try decodedStamps(Array(stampBytes.prefix(length)), count: 8) }
        }
    }

    @Test func randomByteFlips_throwOrDecodeCanonically() {
        var random = CodingRandom(seed: 0xF11B)
        var accepted = 0
        for _ in 0..<4_000 {
            var bytes = encoded(random.record(codedEntity), revision: random.int64())
            for _ in 0...random.below(3) {
                let at = random.below(bytes.count)
                bytes[at] ^= UInt8(1 + random.below(255))
            }
            if random.below(4) == 0 { bytes.removeLast(random.below(min(4, bytes.count))) }
            if random.below(8) == 0 { bytes.append(UInt8(truncatingIfNeeded: random.next())) }
            // Every input that decodes is the one encoding of what it decodes to.
            if let result = try? decoded(bytes) {
                accepted += 1
                #expect(encoded(result.record, revision: result.revision) == bytes)
            }
            var stampBytes = encodedStamps(random.stamps(6))
            stampBytes[random.below(stampBytes.count)] ^= UInt8(1 + random.below(255))
            if let stamps = try? decodedStamps(stampBytes, count: 6) {
                #expect(encodedStamps(stamps) == stampBytes)
            }
        }
        #expect(accepted > 0)  // some flips land in payloads and still decode
    }

    @Test func randomBytes_neverCrash() {
        var random = CodingRandom(seed: 0xB17E5)
        for _ in 0..<4_000 {
            let bytes = [1] + random.bytes(maxLength: 60)
            if let result = try? decoded(bytes) {
                #expect(encoded(result.record, revision: result.revision) == bytes)
            }
            _ = try? decodedStamps(bytes, count: random.below(10))
        }
    }

    @Test func unknownVersion_isRejected() {
        let bytes = encoded(codedRecord(0, .integer(1)))
        let stampBytes = encodedStamps([codedStamp])
        for version: UInt8 in [0, 2, 0x80, 0xFF] {
            let error = #expect(throws: RecordCodingError.self) { try decoded([version] + bytes.dropFirst()) }
            #expect(error?.offset == 0)
            #expect(error?.message.contains("version") == true)
            #expect(throws: RecordCodingError.self) { try decodedStamps([version] + stampBytes.dropFirst(), count: 1) }
        }
        #expect(throws: RecordCodingError(offset: 0, message: "truncated")) { try decoded([]) }
    }

    @Test func valueOfAnotherType_isRejected() throws {
        // Field 2 ("title") becomes an integer field: its text no longer fits.
        var other = codedEntity
        other.fields[2] = Field("title", .integer)
        let bytes = encoded(codedRecord(2, .text("x")))
        let error = #expect(throws: RecordCodingError.self) { try decoded(bytes, entity: other) }
        #expect(error?.offset == 5)  // version, flags, revision, two null tags
        #expect(error?.message.contains("title") == true)
        // Null fits every type, and integers fit references.
        #expect(try decoded(encoded(codedRecord(0, .null)), entity: other).record.values[2] == .null)
        var referencing = codedEntity
        referencing.fields[0] = Field("count", .reference(to: "coded", onDelete: .cascade))
        #expect(try decoded(encoded(codedRecord(0, .integer(9))), entity: referencing).record.values[0] == .integer(9))
        // A bool where a real is expected.
        var bools = codedEntity
        bools.fields[3] = Field("done", .real)
        #expect(throws: RecordCodingError.self) { try decoded(encoded(codedRecord(3, .bool(true))), entity: bools) }
    }

    @Test func entityWithMoreOrFewerFields_isRejected() {
        let bytes = encoded(codedRecord(0, .integer(1)))
        var fewer = codedEntity
        fewer.fields.removeLast()
        #expect(throws: RecordCodingError.self) { try decoded(bytes, entity: fewer) }
        var more = codedEntity
        more.fields.append(Field("extra", .integer))
        #expect(throws: RecordCodingError.self) { try decoded(bytes, entity: more) }
    }

    /// Hand-built ancestors of one integer field: version, flags, revision, value, stamps.
    @Test(arguments: [
        // Over-long varint: 11 bytes.
        ([1, 0, 0, 1] + Array(repeating: 0x80, count: 10) + [0, 0], 4, "longer than 10"),
        // Ten bytes whose last carries more than the 64th bit.
        ([1, 0, 0, 1] + Array(repeating: 0xFF, count: 9) + [0x02, 0], 4, "overflows"),
        ([1, 0, 0x80, 0x00, 1, 2, 0], 2, "padded"),  // revision 0 in two bytes
        ([1, 2, 0, 1, 2, 0], 1, "flags"),
        ([1, 0, 0, 9, 0], 3, "tag"),
        ([1, 0, 0, 1, 2, 0, 0], 6, "trailing"),
        ([1, 0, 0, 1, 2, 0x08], 5, "exceeds"),  // a run of 2 for 1 stamp
        ([1, 0, 0, 0xFF, 0], 3, "tag"),
        ([1, 0, 0, 1, 2, 0x01, 0x00], 6, "replica"),  // replica 0 repeats none's
        ([1, 0, 0, 1, 2, 0x04, 0x83, 0x80, 0x04], 6, "counter"),  // counter 65539
        ([1, 0, 0, 1, 2, 0x02, 0x01], 6, "milliseconds"),  // milliseconds -1
        ([1, 1, 0, 1, 2, 0x01, 0x05, 0x00], 7, "repeats"),  // tombstone run equal to the field's
    ] as [([UInt8], Int, String)])
    func malformedAncestor_isRejectedAtItsOffset(_ bytes: [UInt8], _ offset: Int, _ words: String) {
        let entity = Entity("numbers", fields: [Field("n", .integer)])
        let error = #expect(throws: RecordCodingError.self) { try decoded(bytes, entity: entity) }
        #expect(error?.offset == offset)
        #expect(error?.message.contains(words) == true, "\(error?.message ?? "")")
    }

    @Test func lengthsPastTheEnd_areRejected() {
        let texts = Entity("texts", fields: [Field("text", .text)])
        #expect(throws: RecordCodingError.self) { try decoded([1, 0, 0, 3, 5, 0x61, 0], entity: texts) }
        #expect(throws: RecordCodingError.self) {
            try decoded([1, 0, 0, 3, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01, 0], entity: texts)
        }
        let blobs = Entity("blobs", fields: [Field("blob", .blob)])
        let error = #expect(throws: RecordCodingError.self) { try decoded([1, 0, 0, 7, 3, 1, 2], entity: blobs) }
        #expect(error?.offset == 4)
        let sets = Entity("sets", fields: [Field("set", .textSet)])
        // A count of 2^62 members in 3 bytes, and a member longer than what is left.
        #expect(throws: RecordCodingError.self) {
            try decoded([1, 0, 0, 8, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80, 0x40, 0], entity: sets)
        }
        #expect(throws: RecordCodingError.self) { try decoded([1, 0, 0, 8, 1, 9, 0x61, 0], entity: sets) }
        let reals = Entity("reals", fields: [Field("real", .real)])
        #expect(throws: RecordCodingError.self) { try decoded([1, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0], entity: reals) }
    }

    @Test func textSetMembers_outOfOrderOrRepeated_areRejected() throws {
        let sets = Entity("sets", fields: [Field("set", .textSet)])
        #expect(try decoded([1, 0, 0, 8, 2, 1, 0x61, 1, 0x62, 0], entity: sets).record.values[0] == .textSet(["a", "b"]))
        let unordered = #expect(throws: RecordCodingError.self) { try decoded([1, 0, 0, 8, 2, 1, 0x62, 1, 0x61, 0], entity: sets) }
        #expect(unordered?.offset == 7)
        #expect(throws: RecordCodingError.self) { try decoded([1, 0, 0, 8, 2, 1, 0x61, 1, 0x61, 0], entity: sets) }
        #expect(throws: RecordCodingError.self) { try decoded([1, 0, 0, 8, 2, 1, 0x61, 0, 0], entity: sets) }
    }

    @Test func invalidUTF8_isRejected() throws {
        let invalid: [[UInt8]] = [
            [0x80], [0xC0, 0x80], [0xC1, 0xBF], [0xC2], [0xE0, 0x9F, 0x80], [0xED, 0xA0, 0x80],
            [0xEF, 0xBF], [0xF0, 0x8F, 0xBF, 0xBF], [0xF4, 0x90, 0x80, 0x80], [0xF5, 0x80, 0x80, 0x80], [0xFF],
            Array("abcdefgh".utf8) + [0xC3], [0x61, 0xE2, 0x82, 0x28],
        ]
        for bytes in invalid {
            let error = #expect(throws: RecordCodingError.self) { try decodedText(bytes) }
            #expect(error?.offset == 5)
            #expect(error?.message.contains("UTF-8") == true)
        }
        // Each position of the eight-byte ASCII scan: one bad byte or one "é" among ASCII.
        for position in 0..<24 {
            var bytes = Array(repeating: UInt8(ascii: "a"), count: 24)
            bytes[position] = 0x80
            #expect(throws: RecordCodingError.self) { try decodedText(bytes) }
            bytes[position] = 0xFF
            #expect(throws: RecordCodingError.self) { try decodedText(bytes) }
            bytes[position...].replaceSubrange(position..<position + 1, with: [0xC3, 0xA9])
            #expect(try decodedText(bytes).utf8.elementsEqual(bytes))
        }
        #expect(try decodedText([0xF4, 0x8F, 0xBF, 0xBF]) == "\u{10FFFF}")
        #expect(try decodedText([0xED, 0x9F, 0xBF]) == "\u{D7FF}")
    }

    /// Acceptance agrees with the standard library's validation, over every one- and two-byte
    /// input and random longer ones biased towards the boundary bytes.
    @Test func utf8Validation_agreesWithTheStandardLibrary() {
        func check(_ bytes: [UInt8]) {
            let expected = String(validating: bytes, as: UTF8.self)
            let actual = try? decodedText(bytes)
            #expect((actual != nil) == (expected != nil), "\(bytes)")
            if let actual { #expect(actual.utf8.elementsEqual(bytes), "\(bytes)") }
        }
        for first in 0...255 {
            check([UInt8(first)])
            for second in stride(from: 0, through: 255, by: 1) { check([UInt8(first), UInt8(second)]) }
        }
        let edges: [UInt8] = [0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xC1, 0xC2, 0xDF, 0xE0, 0xE1, 0xEC, 0xED, 0xEE, 0xEF, 0xF0, 0xF1, 0xF3, 0xF4, 0xF5, 0xFF]
        var random = CodingRandom(seed: 0x07F8)
        for _ in 0..<20_000 {
            let length = 1 + random.below(12)
            check((0..<length).map { _ in random.below(3) == 0 ? UInt8(random.below(256)) : edges[random.below(edges.count)] })
        }
    }

    @Test func stampCountMismatch_isRejected() {
        let bytes = encodedStamps([codedStamp, .none, codedStamp])
        #expect(throws: RecordCodingError.self) { try decodedStamps(bytes, count: 2) }
        #expect(throws: RecordCodingError.self) { try decodedStamps(bytes, count: 4) }
        #expect(throws: RecordCodingError.self) { try decodedStamps(bytes, count: -1) }
        #expect(throws: RecordCodingError.self) { try decodedStamps(bytes + [0], count: 3) }
        // A run of 2^29 stamps where 5 are expected, and a huge count with no stamps: both
        // throw without allocating for what the bytes or the count claim.
        let run = #expect(throws: RecordCodingError.self) { try decodedStamps([1, 0xF8, 0xFF, 0xFF, 0xFF, 0x0F], count: 5) }
        #expect(run?.offset == 1)
        #expect(throws: RecordCodingError.self) { try decodedStamps([1], count: Int.max) }
    }

    @Test func errorDescription_namesTheOffset() {
        #expect(RecordCodingError(offset: 12, message: "truncated").description == "offset 12: truncated")
    }
}
