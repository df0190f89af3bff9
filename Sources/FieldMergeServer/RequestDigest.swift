import FieldMerge
import FieldMergeProtocol

/// A 64-bit FNV-1a digest of a request's change sets as decoded (not of its bytes, so that
/// the order of keys, spacing, escapes and gzip do not count): kept with the stored reply, so
/// that a request reusing its `clientID` and `requestID` with other change sets is told
/// apart from a retry (``ServerError/Code/idempotencyMismatch``). Records are taken in id
/// order within each entity; values, stamps, revisions and the lists of ids all count.
struct RequestDigest {
    private(set) var value: UInt64 = 0xcbf2_9ce4_8422_2325

    init(_ changeSets: [ChangeSet]) {
        add(changeSets.count)
        for changeSet in changeSets {
            add(changeSet.entities.count)
            for changes in changeSet.entities {
                add(changes.entity)
                for ids in [changes.create, changes.update, changes.delete, changes.recreate] {
                    add(ids.count)
                    for id in ids { add(id) }
                }
                add(changes.records.count)
                for record in changes.records.sorted(by: { $0.id < $1.id }) { add(record) }
            }
        }
    }

    private mutating func add(_ record: WireRecord) {
        add(record.id)
        add(record.revision ?? -1)
        add(record.present.count)
        for index in record.present {
            add(index)
            add(record.values[index])
        }
        if let stamps = record.stamps {
            add(stamps.count)
            for stamp in stamps { add(stamp.clock); add(stamp.replica.rawValue) }
        } else {
            add(-1)
        }
    }

    private mutating func add(_ value: Value) {
        switch value {
        case .null: byte(0)
        case .integer(let v): byte(1); add(v)
        case .real(let v): byte(2); add(v.bitPattern)
        case .text(let v): byte(3); add(v)
        case .bool(let v): byte(4); byte(v ? 1 : 0)
        case .date(let v): byte(5); add(v)
        case .blob(let v): byte(6); add(v.count); for b in v { byte(b) }
        case .textSet(let v):
            byte(7)
            let members = v.sorted()
            add(members.count)
            for member in members { add(member) }
        }
    }

    private mutating func add(_ text: String) {
        add(text.utf8.count)
        for b in text.utf8 { byte(b) }
    }

    private mutating func add(_ number: Int) { add(UInt64(bitPattern: Int64(number))) }
    private mutating func add(_ number: Int64) { add(UInt64(bitPattern: number)) }

    private mutating func add(_ number: UInt64) {
        for shift in stride(from: 0, to: 64, by: 8) { byte(UInt8(truncatingIfNeeded: number >> UInt64(shift))) }
    }

    private mutating func byte(_ b: UInt8) {
        value = (value ^ UInt64(b)) &* 0x0000_0100_0000_01b3
    }
}
