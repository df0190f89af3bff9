import FieldMerge
import FieldMergeSQLite

/// What the oracle found.
public struct OracleResult: Sendable, Equatable {
    /// Records whose existence was checked, and fields whose value was.
    public var records = 0, fields = 0
    /// Records of an `editWins` or `lastEditWins` entity that were deleted while another
    /// device edited them: brought back by the merge, or gone.
    public var broughtBack = 0, deletedDespiteEdits = 0
    /// Field edits the server's rule refused, and records kept aside for them at the end.
    public var refusedEdits = 0, keptAside = 0
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
///   `setNull` target is gone); under `editWins` or `lastEditWins`, a record deleted while
///   another device edited it may come back (either outcome is right);
/// - a field update the server's rule refuses is kept aside on its device, never applied;
/// - a `lastEditWins` field holds the value of its newest-stamped write: no write has a larger
///   stamp (clamped writes of devices whose clocks ran too far ahead excepted);
/// - a counter is its initial value plus every increment; a set holds its initial members and
///   every member added; a `max` field holds the largest value written.
struct Oracle: Sendable {
    let seed: SeedData
    /// The schema the data ends in (``LeagueSchema/upgraded`` after an upgrade), and its roles.
    private(set) var schema: Schema
    private(set) var roles: [[FieldRole]]
    private(set) var edits: [Edit] = []

    init(seed: SeedData) {
        self.seed = seed
        schema = seed.schema
        roles = FieldRole.roles(seed.schema)
    }

    /// Judges by a newer version of the schema: records made before it hold the new fields'
    /// defaults under `Stamp.schemaDefault`.
    mutating func adopt(_ schema: Schema) {
        self.schema = schema
        roles = FieldRole.roles(schema)
    }

    mutating func record(_ new: [Edit]) { edits += new }

    struct Key: Hashable { var entity: Int; var id: Int64 }

    /// A record a device kept aside because the server refused its change.
    struct Parked: Hashable { var device: Int; var entity: String; var id: Int64 }

    /// What the rules say of a record's existence.
    enum Fate {
        case kept, gone
        /// Deleted while another device edited it, under a delete policy that lets an edit
        /// concurrent with the delete bring it back: either outcome is right.
        case either
    }

    /// Checks the converged data in `store` against the edits. `idMaps[d]` is device d's map
    /// of temporary to permanent ids, by entity. `refuses` is the server's authorization rule
    /// for field updates (device, entity, id), nil for none; `parked` what the devices kept
    /// aside when the server refused a change.
    func check(
        _ store: Store, idMaps: [[String: [Int64: Int64]]], refuses: (@Sendable (Int, String, Int64) -> Bool)? = nil,
        parked: Set<Parked> = []
    ) throws -> OracleResult {
        var check = Check(oracle: self, idMaps: idMaps, refuses: refuses)
        try check.run(store)
        try check.checkRefusals(parked, store)
        return check.result
    }
}

/// One run of the oracle over the final data.
struct Check {
    typealias Key = Oracle.Key
    let oracle: Oracle
    let idMaps: [[String: [Int64: Int64]]]
    let refuses: (@Sendable (Int, String, Int64) -> Bool)?
    var result = OracleResult()
    var creations: [Key: Edit] = [:]
    var unresolved: [Edit] = []
    /// Records deleted directly (not by a cascade), with the devices that deleted them.
    var deleters: [Key: Set<Int>] = [:]
    /// Field edits the server's rule refuses, with the record's permanent id.
    var refused: [(edit: Edit, key: Key)] = []
    /// Deletes of records that never had a permanent id: (device, entity, temporary id).
    var deletedLocally: Set<[Int64]> = []
    var fieldEdits: [Key: [Edit]] = [:]
    var present: [Set<Int64>] = []
    var fates: [Key: Oracle.Fate] = [:]
    var schema: Schema { oracle.schema }

    init(oracle: Oracle, idMaps: [[String: [Int64: Int64]]], refuses: (@Sendable (Int, String, Int64) -> Bool)?) {
        self.oracle = oracle
        self.idMaps = idMaps
        self.refuses = refuses
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
                if let id { deleters[Key(entity: edit.entity, id: id), default: []].insert(edit.device) } else {
                    deletedLocally.insert([Int64(edit.device), Int64(edit.entity), edit.id])
                }
            default:
                guard let id else { continue }
                let key = Key(entity: edit.entity, id: id)
                // Only an update of a record the device knew by its permanent id can be refused:
                // an edit of a record not yet on the server travels with its create.
                if edit.id > 0, let refuses, refuses(edit.device, schema.entities[edit.entity].name, id) {
                    refused.append((edit, key))
                } else {
                    fieldEdits[key, default: []].append(edit)
                }
            }
        }
        try checkExistenceAndReferences(store)
        for edit in unresolved where !deletedLocally.contains([Int64(edit.device), Int64(edit.entity), edit.id]) {
            var kept = true
            for parent in parents(of: edit) {
                guard let parent, fate(parent) == .kept else { kept = false; break }
            }
            if kept {
                result.fail("\(schema.entities[edit.entity].name) \(edit.id) of device \(edit.device) never reached the server")
            }
        }
        // A record brought back after a delete may rightly miss what its deleter had not sent.
        for key in Set(fieldEdits.keys).union(creations.keys) where present[key.entity].contains(key.id) && fate(key) == .kept {
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

    /// The values a record was created or seeded with; nil for a record nobody made. Fields
    /// a later schema version added hold their defaults from `added` on (stamped zero).
    func initial(_ key: Key) -> (values: ContiguousArray<Value>, stamp: Stamp, exempt: Bool, device: Int?, added: Int)? {
        let fields = schema.entities[key.entity].fields
        func padded(_ values: ContiguousArray<Value>) -> ContiguousArray<Value> {
            values + fields[min(values.count, fields.count)...].map(\.defaultValue)
        }
        if let creation = creations[key] {
            return (padded(creation.values), creation.stamp, creation.exempt, creation.device, creation.values.count)
        }
        guard key.id >= 1, key.id <= Int64(oracle.seed.count(key.entity)) else { return nil }
        let values = oracle.seed.values(entity: key.entity, id: key.id)
        return (padded(values), Stamp(milliseconds: oracle.seed.start, replica: SeedData.replica), false, nil, values.count)
    }

    /// What the rules say of `key`: gone when deleted (unless its entity's delete policy lets a
    /// concurrent edit bring it back and a device other than the deleters edited it: then
    /// either) or when a cascading parent is gone; kept otherwise.
    mutating func fate(_ key: Key) -> Oracle.Fate {
        if let known = fates[key] { return known }
        var fate = Oracle.Fate.kept
        if let deleters = deleters[key] {
            let editedElsewhere = (fieldEdits[key] ?? []).contains { !deleters.contains($0.device) }
            fate = schema.entities[key.entity].deletePolicy != .deleteWins && editedElsewhere ? .either : .gone
        }
        if fate != .gone, let start = initial(key) {
            for (index, role) in roles[key.entity].enumerated() {
                guard case .reference(let target, .cascade) = role, case .integer(let id) = start.values[index] else { continue }
                let parent = start.device.map { resolve(device: $0, entity: target, id: id) } ?? id
                guard let parent else { fate = .gone; break }
                switch self.fate(Key(entity: target, id: parent)) {
                case .gone: fate = .gone
                case .either: fate = .either
                case .kept: break
                }
                if fate == .gone { break }
            }
        }
        fates[key] = fate
        return fate
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
                        // Entities come in dependency order: the target's presence is known.
                        let fate = parent.map { self.fate(Key(entity: target, id: $0)) } ?? .gone
                        let kept = fate != .gone && parent.map { present[target].contains($0) } == true
                        expected = kept ? .integer(parent!) : .null
                        // A target brought back after its delete set this to null stays null.
                        if fate == .either, case .null = row[column + 1] { expected = .null }
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
            let keys = (0..<Int64(oracle.seed.count(entity))).map { Key(entity: entity, id: $0 + 1) }
                + creations.keys.filter { $0.entity == entity }
            for key in keys {
                result.records += 1
                let exists = present[entity].contains(key.id)
                switch fate(key) {
                case .either where deleters[key] != nil:
                    if exists { result.broughtBack += 1 } else { result.deletedDespiteEdits += 1 }
                case .either: break
                case .kept where !exists: result.fail("\(schema.entities[entity].name) \(key.id) was lost")
                case .gone where exists:
                    result.fail("\(schema.entities[entity].name) \(key.id) should be gone (deleted, or a cascading parent is)")
                default: break
                }
            }
        }
    }
}
