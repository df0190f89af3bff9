import FieldMerge
import FieldMergeSync
import FieldMergeProtocol
import FieldMergeWorkload

/// The records a simulation starts from: a pure function of the seed, so the oracle can
/// recompute any seeded record instead of keeping 100,000 of them in memory.
///
/// Record *k* (1-based) of entity *e* gets permanent id *k*: the seed is uploaded to an
/// empty server in entity order, and the server numbers each entity's creates from 1 (the
/// simulation checks that it did). References point at seeded records of earlier entities.
struct SeedData: Sendable {
    let schema: Schema
    let counts: [Int]
    let seed: UInt64
    /// Wall-clock milliseconds of the seed's stamps.
    let start: UInt64
    static let replica = ReplicaID(0x5EED)

    init(schema: Schema, records: Int, seed: UInt64, start: UInt64) {
        self.schema = schema
        counts = LeagueSchema.seedCounts(total: records)
        self.seed = seed
        self.start = start
    }

    var total: Int { counts.reduce(0, +) }

    /// How many records of `entity` were seeded: none of an entity a later schema version
    /// added.
    func count(_ entity: Int) -> Int { entity < counts.count ? counts[entity] : 0 }

    /// The seeded values of record `id` of entity `entity` (an index into the schema).
    func values(entity: Int, id: Int64) -> ContiguousArray<Value> {
        var random = SplitMix64(seed: seed ^ (UInt64(entity + 1) &* 0xA24B_AED4_963E_E407) ^ (UInt64(id) &* 0x9FB2_1C65_1E98_DF25))
        let fields = schema.entities[entity].fields
        var values = ContiguousArray<Value>()
        values.reserveCapacity(fields.count)
        for (index, field) in fields.enumerated() {
            let roll = random.next()
            switch (field.type, field.strategy) {
            case (.reference(let target, let action), _):
                let count = counts[schema.entities.firstIndex { $0.name == target }!]
                values.append(action == .setNull && roll % 10 == 0 ? .null : .integer(Int64((roll >> 8) % UInt64(count)) + 1))
            case (.integer, .counter?): values.append(.integer(Int64(roll % 10)))
            case (.integer, _): values.append(.integer(Int64(roll % 1_000)))
            case (.real, .max?): values.append(.real(Double(roll % 1_000) / 10))
            case (.real, _): values.append(.real(Double(roll % 100_000) / 100))
            case (.text, _): values.append(.text("\(schema.entities[entity].name.prefix(3))\(id).\(index)"))
            case (.textSet, _): values.append(.textSet(TextSet(["s\(roll % 8)"])))
            case (.date, _): values.append(.date(Int64(start) - Int64(roll % 10_000_000_000)))
            case (.bool, _): values.append(.bool(roll % 2 == 0))
            case (.blob, _): values.append(.blob([UInt8(truncatingIfNeeded: roll)]))
            case (.attachment, _): values.append(.simulatedAttachment(roll))
            }
        }
        return values
    }

    /// The seed as requests of at most `batch` creates each (one change set per 1,000),
    /// with temporary ids `-k` and references to permanent ids of records sent before. The
    /// sender sets each request's `maxRevision` to the revision the previous one returned.
    func requests(batch: Int = 10_000) -> [SyncRequest] {
        var requests: [SyncRequest] = []
        var changeSets: [ChangeSet] = []
        var inRequest = 0
        let stamp = Stamp(milliseconds: start, replica: Self.replica)
        for (position, entity) in schema.entities.enumerated() {
            var next: Int64 = 1
            while next <= Int64(counts[position]) {
                let last = min(Int64(counts[position]), next + 999)
                var changes = EntityChanges(entity: entity.name)
                for id in next...last {
                    let record = Record(entity, id: -id, values: values(entity: position, id: id), stamp: stamp)
                    changes.create.append(-id)
                    changes.records.append(WireRecord(record))
                }
                changeSets.append(ChangeSet(entities: [changes]))
                inRequest += Int(last - next + 1)
                next = last + 1
                if inRequest >= batch {
                    requests.append(SyncRequest(maxRevision: 0, changeSets: changeSets))
                    changeSets = []
                    inRequest = 0
                }
            }
            // Later entities reference this one by permanent id: it must be on the server first.
            if !changeSets.isEmpty {
                requests.append(SyncRequest(maxRevision: 0, changeSets: changeSets))
                changeSets = []
                inRequest = 0
            }
        }
        return requests
    }

    /// Checks that the server numbered the seeded records as expected (`-k` became `k`).
    static func checkNumbering(_ response: SyncResponse) throws {
        for changeSet in response.changeSets where changeSet.conflict != nil {
            guard changeSet.conflict == false else { throw SimulationError("the server refused the seed") }
            for changes in changeSet.entities {
                for record in changes.records where record.oldID != nil && record.oldID != -record.id {
                    throw SimulationError("seeding needs an empty server: \(changes.entity) \(record.oldID!) became \(record.id)")
                }
            }
        }
    }
}

/// A simulation that cannot run (bad options, a server that is not empty, a device that
/// never recovers).
public struct SimulationError: Error, CustomStringConvertible, Sendable {
    public var message: String
    public init(_ message: String) { self.message = message }
    public var description: String { message }
}
