import FieldMerge
import FieldMergeProtocol
import FieldMergeWorkload

/// An entity with one field of every type (and a reference to itself).
let wireThings = Entity("things", fields: [
    Field("count", .integer),
    Field("score", .real),
    Field("title", .text),
    Field("done", .bool),
    Field("due", .date),
    Field("data", .blob),
    Field("parent", .reference(to: "things", onDelete: .cascade)),
    Field("tags", .textSet),
])
let wireNotes = Entity("notes", fields: [Field("body", .text)])
let wireSchema = try! Schema([wireThings, wireNotes])
let wireCodec = WireCodec(schema: wireSchema)

/// The schema of the case study's example (Specs/protocol.md).
let wireCaseStudySchema = try! Schema([
    Entity("screen_instances", fields: [
        Field("screen_id", .integer), Field("date", .date), Field("comment", .text),
    ]),
    Entity("screen_instance_items", fields: [
        Field("screen_instance_id", .reference(to: "screen_instances", onDelete: .cascade)),
        Field("numeric_value", .integer),
    ]),
])

func wireBytes(_ text: String) -> [UInt8] { Array(text.utf8) }

/// A record of `entity` carrying the fields named in `values` (in any order).
func wireRecord(
    _ entity: Entity, id: Int64, _ values: [String: Value], stamps: [String: Stamp]? = nil,
    revision: Int64? = nil, oldID: Int64? = nil
) -> WireRecord {
    var row = ContiguousArray<Value>(repeating: .null, count: entity.fields.count)
    var present = FieldMask()
    for (name, value) in values {
        let index = entity.fieldIndex(name)!
        row[index] = value
        present.insert(index)
    }
    var stampRow: ContiguousArray<Stamp>?
    if let stamps {
        var full = ContiguousArray<Stamp>(repeating: .none, count: entity.fields.count)
        for (name, stamp) in stamps { full[entity.fieldIndex(name)!] = stamp }
        stampRow = full
    }
    return WireRecord(id: id, present: present, values: row, stamps: stampRow, revision: revision, oldID: oldID)
}

/// The request of the wire tests: every value type and its extremes.
func wireExtremesRequest() -> SyncRequest {
    let big = Stamp(clock: .max, replica: ReplicaID(.max))
    let mid = Stamp(clock: UInt64(Int64.max) + 1, replica: ReplicaID(7))
    let records = [
        wireRecord(wireThings, id: -1, [
            "count": .integer(.max), "score": .real(-0.0), "title": .text(""), "done": .bool(true),
            "due": .date(.min), "data": .blob([]), "parent": .integer(.min), "tags": .textSet([]),
        ], stamps: ["count": big, "title": mid, "tags": Stamp(clock: 1, replica: ReplicaID(0))]),
        wireRecord(wireThings, id: .max, [
            "count": .integer(.min), "score": .real(1e308), "title": .text("\"quoted\" \\ back/slash \n\r\t\u{8}\u{C}"),
            "done": .bool(false), "due": .date(.max), "data": .blob([0]), "parent": .integer(-10),
            "tags": .textSet(["", "a", "é", "emoji 🎉", "zeta"]),
        ], revision: Int64.max),
        wireRecord(wireThings, id: .min, [
            "count": .integer(0), "score": .real(.leastNonzeroMagnitude), "title": .text("nul \u{0} inside, controls \u{1}\u{1F}\u{7F}"),
            "due": .date(-1), "data": .blob([0, 1]), "tags": .textSet(["x"]),
        ], stamps: [:], revision: 0, oldID: -12),
        wireRecord(wireThings, id: 0, [
            "score": .real(-1.7976931348623157e308), "title": .text("héllo wörld — 中文 — 𝄞 — 👩‍👩‍👧"),
            "due": .date(-62_167_219_200_001), "data": .blob([0, 1, 2]), "count": .null, "done": .null,
        ]),
        wireRecord(wireThings, id: 42, [
            "score": .real(0.1), "due": .date(253_402_300_800_000),
            "data": .blob((0..<100_000).map { UInt8(truncatingIfNeeded: $0 &* 7919) }),
            "title": .text(String(repeating: "long text ", count: 5_000)),
        ]),
        wireRecord(wireThings, id: 43, [:]),
    ]
    let things = EntityChanges(
        entity: "things", create: [-1, .min], update: [.max, 0, 42], delete: [43], records: records)
    let notes = EntityChanges(entity: "notes", create: [], update: [], delete: [5], records: [
        wireRecord(wireNotes, id: 5, ["body": .text("\u{2028}\u{2029} line separators")], revision: 3),
    ])
    return SyncRequest(
        maxRevision: 1000, changeSets: [ChangeSet(entities: [notes, things]), ChangeSet(entities: [])],
        clientID: "client \"ü\"", requestID: "req-\u{1}", limit: Int(Int32.max))
}

/// The workload's seeded SplitMix64 drives every random test.
typealias WireRandom = SplitMix64
