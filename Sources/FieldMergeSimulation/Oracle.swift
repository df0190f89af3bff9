import FieldMerge
import FieldMergeSQLite

/// What the oracle found.
public struct OracleResult: Sendable, Equatable {
    /// Records whose existence was checked, and fields whose value was.
    public var records = 0, fields = 0
    /// What the rules say should be there and is not (first few, and how many in all).
    public var failures: [String] = []
    public var failureCount = 0

    mutating func fail(_ message: String) {
        failureCount += 1
        if failures.count < 20 { failures.append(message) }
    }
}

/// Knows every edit and the seed, and says what the converged data must hold
/// (Specs/simulation.md, "The oracle"):
///
/// - a deleted record is gone, and so is every record whose cascading parent is gone; any
///   other seeded or created record exists, with its references as written (or null where a
///   `setNull` target is gone);
/// - a `lastEditWins` field holds the value of its newest-stamped write: no write has a larger
///   stamp (clamped writes of devices whose clocks ran too far ahead excepted);
/// - a counter is its initial value plus every increment; a set holds its initial members and
///   every member added; a `max` field holds the largest value written.
struct Oracle: Sendable {
    let seed: SeedData
    let roles: [[FieldRole]]
    private(set) var edits: [Edit] = []

    init(seed: SeedData) {
        self.seed = seed
        roles = FieldRole.roles(seed.schema)
    }

    mutating func record(_ new: [Edit]) { edits += new }

    struct Key: Hashable { var entity: Int; var id: Int64 }

    /// Checks the converged data in `store` against the edits. `idMaps[d]` is device d's map
    /// of temporary to permanent ids, by entity.
    func check(_ store: Store, idMaps: [[String: [Int64: Int64]]]) throws -> OracleResult {
        var check = Check(oracle: self, idMaps: idMaps)
        try check.run(store)
        return check.result
    }
}

/// One run of the oracle over the final data.
struct Check {
    typealias Key = Oracle.Key
    let oracle: Oracle
    let idMaps: [[String: [Int64: Int64]]]
    var result = OracleResult()
    var creations: [Key: Edit] = [:]
    var unresolved: [Edit] = []
    var deleted: Set<Key> = []
    /// Deletes of records that never had a permanent id: (device, entity, temporary id).
    var deletedLocally: Set<[Int64]> = []
    var fieldEdits: [Key: [Edit]] = [:]
    var present: [Set<Int64>] = []
    var alive: [Key: Bool] = [:]
    var schema: Schema { oracle.seed.schema }

    init(oracle: Oracle, idMaps: [[String: [Int64: Int64]]]) {
        self.oracle = oracle
        self.idMaps = idMaps
    }

    func resolve(device: Int, entity: Int, id: Int64) -> Int64? {
        id > 0 ? id : idMaps[device][schema.entities[entity].name]?[id]
    }

    mutating func run(_ store: Store) throws {
        for edit in oracle.edits {
            let id = resolve(device: edit.device, entity: edit.entity, id: edit.id)
            switch edit.kind {
            case .create:
                if let id { creations[Key(entity: edit.entity, id: id)] = edit } else { unresolved.append(edit) }
            case .delete:
                if let id { deleted.insert(Key(entity: edit.entity, id: id)) } else {
                    deletedLocally.insert([Int64(edit.device), Int64(edit.entity), edit.id])
                }
            default:
                if let id { fieldEdits[Key(entity: edit.entity, id: id), default: []].append(edit) }
            }
        }
        try checkExistenceAndReferences(store)
        for edit in unresolved where !deletedLocally.contains([Int64(edit.device), Int64(edit.entity), edit.id]) {
            var kept = true
            for parent in parents(of: edit) {
                guard let parent, isAlive(parent) else { kept = false; break }
            }
            if kept {
                result.fail("\(schema.entities[edit.entity].name) \(edit.id) of device \(edit.device) never reached the server")
            }
        }
        for key in Set(fieldEdits.keys).union(creations.keys) where present[key.entity].contains(key.id) {
            try checkFields(key, store)
        }
    }

    /// The cascading parents of a record as written, resolved (nil: never got a permanent id).
    func parents(of creation: Edit) -> [Key?] {
        var parents: [Key?] = []
        for (index, role) in roles[creation.entity].enumerated() {
            guard case .reference(let target, .cascade) = role, case .integer(let id) = creation.values[index] else { continue }
            parents.append(resolve(device: creation.device, entity: target, id: id).map { Key(entity: target, id: $0) })
        }
        return parents
    }

    var roles: [[FieldRole]] { oracle.roles }

    /// The values a record was created or seeded with; nil for a record nobody made.
    func initial(_ key: Key) -> (values: ContiguousArray<Value>, stamp: Stamp, exempt: Bool, device: Int?)? {
        if let creation = creations[key] { return (creation.values, creation.stamp, creation.exempt, creation.device) }
        guard key.id >= 1, key.id <= Int64(oracle.seed.counts[key.entity]) else { return nil }
        return (oracle.seed.values(entity: key.entity, id: key.id), Stamp(milliseconds: oracle.seed.start, replica: SeedData.replica), false, nil)
    }

    /// Whether the rules keep `key`: not deleted, and every cascading parent kept.
    mutating func isAlive(_ key: Key) -> Bool {
        if let known = alive[key] { return known }
        var keep = !deleted.contains(key)
        if keep, let start = initial(key) {
            for (index, role) in roles[key.entity].enumerated() {
                guard case .reference(let target, .cascade) = role, case .integer(let id) = start.values[index] else { continue }
                let parent = start.device.map { resolve(device: $0, entity: target, id: id) } ?? id
                guard let parent, isAlive(Key(entity: target, id: parent)) else { keep = false; break }
            }
        }
        alive[key] = keep
        return keep
    }

    mutating func checkExistenceAndReferences(_ store: Store) throws {
        present = []
        for (entity, definition) in schema.entities.enumerated() {
            let references = roles[entity].indices.filter { if case .reference = roles[entity][$0] { true } else { false } }
            let columns = (["id"] + references.map { definition.fields[$0].name }).map(Database.quote).joined(separator: ", ")
            var ids = Set<Int64>()
            for row in try store.database.rows("SELECT \(columns) FROM \(Database.quote(definition.name))") {
                guard case .integer(let id) = row[0] else { continue }
                ids.insert(id)
                let key = Key(entity: entity, id: id)
                guard let start = initial(key) else {
                    result.fail("\(definition.name) \(id) exists, but no device created it"); continue
                }
                for (column, field) in references.enumerated() {
                    guard case .reference(let target, _) = roles[entity][field] else { continue }
                    var expected = start.values[field]
                    if case .integer(let written) = expected {
                        let parent = start.device.map { resolve(device: $0, entity: target, id: written) } ?? written
                        if let parent, isAlive(Key(entity: target, id: parent)) { expected = .integer(parent) } else { expected = .null }
                    }
                    let actual: Value = if case .integer(let v) = row[column + 1] { .integer(v) } else { .null }
                    if actual != expected {
                        result.fail("\(definition.name) \(id).\(definition.fields[field].name) is \(actual), expected \(expected)")
                    }
                }
            }
            present.append(ids)
        }
        for entity in schema.entities.indices {
            let keys = (1...Int64(max(1, oracle.seed.counts[entity]))).map { Key(entity: entity, id: $0) }
                + creations.keys.filter { $0.entity == entity }
            for key in keys {
                result.records += 1
                let exists = present[entity].contains(key.id), expected = isAlive(key)
                if exists != expected {
                    result.fail("\(schema.entities[entity].name) \(key.id) " + (expected ? "was lost" : "should be gone (deleted, or a cascading parent is)"))
                }
            }
        }
    }
}
