import FieldMerge
import FieldMergeSQLite
import FieldMergeWorkload

/// One local edit, as the oracle needs it: who made it, on what, with which stamp.
struct Edit: Sendable {
    enum Kind: Sendable {
        /// A new record (`values` holds every field; references may be temporary ids).
        case create
        /// A `lastEditWins` field set to `value`.
        case set
        /// A counter raised by this much.
        case increment(Int64)
        /// A member added to a set.
        case add(String)
        /// A `max` field raised to `value`.
        case raise
        /// A delete (cascading along the schema's references).
        case delete
    }

    var kind: Kind
    var device: Int
    var entity: Int
    /// The id as the device knew it: negative while temporary.
    var id: Int64
    var field: Int = -1
    var value: Value = .null
    var values: ContiguousArray<Value> = []
    var stamp: Stamp = .none
    /// For a field write: the field's stamp the device saw before it (the write it replaced).
    var base: Stamp = .none
    /// Made while the device's clock ran further ahead than the server accepts: the server
    /// clamps its stamps, so "newest wins" is judged by the clamped stamp.
    var exempt = false
    /// Written with plain SQL through a second connection (the store captured it).
    var plainSQL = false
}

/// Makes random local edits on one device's store: overlapping updates (a few hot records
/// take a share of them), counter increments, set additions, max raises, creates of small
/// trees whose foreign keys point at other new records, and cascading deletes.
struct EditGenerator: Sendable {
    private(set) var schema: Schema
    private(set) var roles: [[FieldRole]]
    let device: Int
    let exempt: Bool
    /// Delete records that others reference (cascading), and reference any record (the
    /// default). Off, the generator deletes only records nothing references and that are not
    /// *protected*, and new records reference only protected records or records created in
    /// the same batch (how the first runs got past bugs since fixed, Specs/simulation.md §6).
    let cascades: Bool
    let seed: SeedData
    /// The device's file, when it writes its field updates with plain SQL through a second
    /// connection (as an app using another SQLite library would) instead of the store's API.
    let plainSQLPath: String?
    var random: SplitMix64
    private var serial = 0
    /// Fields by role, as (entity, field) pairs.
    private var byRole: [FieldRoleKey: [(Int, Int)]] = [:]

    enum FieldRoleKey: Hashable { case lastEditWins, counter, union, max }

    init(schema: Schema, device: Int, exempt: Bool, cascades: Bool, seedData: SeedData, seed: UInt64, plainSQLPath: String? = nil) {
        self.schema = schema
        self.plainSQLPath = plainSQLPath
        self.cascades = cascades
        self.seed = seedData
        roles = FieldRole.roles(schema)
        self.device = device
        self.exempt = exempt
        random = SplitMix64(seed: seed)
        adopt(schema)
    }

    /// Edits by `schema` from now on (a newer version after an upgrade: new fields are
    /// edited too).
    mutating func adopt(_ schema: Schema) {
        self.schema = schema
        roles = FieldRole.roles(schema)
        var byRole: [FieldRoleKey: [(Int, Int)]] = [:]
        for (entity, fields) in roles.enumerated() {
            for (field, role) in fields.enumerated() {
                switch role {
                case .lastEditWins: byRole[.lastEditWins, default: []].append((entity, field))
                case .counter: byRole[.counter, default: []].append((entity, field))
                case .union: byRole[.union, default: []].append((entity, field))
                case .max: byRole[.max, default: []].append((entity, field))
                case .reference: break
                }
            }
        }
        self.byRole = byRole
    }

    /// Makes `count` edits (fewer when a pick finds nothing alive) and returns them.
    mutating func edit(_ store: Store, count: Int) throws -> [Edit] {
        var edits: [Edit] = []
        let connection = try plainSQLPath.map { try Database(.file(path: $0)) }
        defer { connection?.close() }
        for _ in 0..<count {
            let roll = random.below(100)
            switch roll {
            case ..<40: try update(store, .lastEditWins, connection, into: &edits)
            case ..<52: try update(store, .counter, connection, into: &edits)
            case ..<62: try update(store, .union, connection, into: &edits)
            case ..<70: try update(store, .max, connection, into: &edits)
            case ..<95: _ = try create(store, entity: random.below(schema.entities.count), depth: 0, into: &edits)
            default: try delete(store, into: &edits)
            }
        }
        return edits
    }

    private mutating func update(_ store: Store, _ role: FieldRoleKey, _ connection: Database?, into edits: inout [Edit]) throws {
        guard let candidates = byRole[role], !candidates.isEmpty else { return }
        let (entity, field) = candidates[random.below(candidates.count)]
        guard let record = try pick(store, entity: entity) else { return }
        let current = record.values[field]
        var edit = Edit(kind: .set, device: device, entity: entity, id: record.id, field: field, base: record.stamps[field], exempt: exempt)
        serial += 1
        switch role {
        case .lastEditWins:
            edit.value = freshValue(schema.entities[entity].fields[field].type, current: current)
        case .counter:
            let step = Int64(1 + random.below(5))
            guard case .integer(let total) = current.isNull ? .integer(0) : current else { return }
            (edit.kind, edit.value) = (.increment(step), .integer(total &+ step))
        case .union:
            let member = "d\(device)n\(serial)"
            var members = if case .textSet(let set) = current { set.elements } else { [String]() }
            members.append(member)
            (edit.kind, edit.value) = (.add(member), .textSet(TextSet(members)))
        case .max:
            let step = 1 + random.below(50)
            switch current {
            case .integer(let value): edit.value = .integer(value + Int64(step))
            case .real(let value): edit.value = .real(value + Double(step))
            default: edit.value = schema.entities[entity].fields[field].type == .real ? .real(Double(step)) : .integer(Int64(step))
            }
            edit.kind = .raise
        }
        let name = schema.entities[entity].name
        if let connection, let plain = Self.plainSQLValue(edit.value) {
            try writeWithPlainSQL(connection, edit, plain, entity: name, field: schema.entities[entity].fields[field].name)
            try store.captureExternalWrites()
            edit.plainSQL = true
        } else {
            guard !(try store.update(name, id: record.id, set: [(field, edit.value)])).isEmpty else { return }
        }
        edit.stamp = try store.record(name, id: record.id)!.stamps[field]
        guard edit.stamp != edit.base else { return }  // the value did not change
        edits.append(edit)
    }

    /// An UPDATE on the device's file through another connection: a counter's increment as
    /// SQL arithmetic, any other value bound as it is.
    private func writeWithPlainSQL(_ connection: Database, _ edit: Edit, _ value: SQLValue, entity: String, field: String) throws {
        let (table, column) = (Database.quote(entity), Database.quote(field))
        if case .increment(let step) = edit.kind {
            try connection.run("UPDATE \(table) SET \(column) = coalesce(\(column), 0) + ? WHERE \"id\" = ?", [.integer(step), .integer(edit.id)])
        } else {
            try connection.run("UPDATE \(table) SET \(column) = ? WHERE \"id\" = ?", [value, .integer(edit.id)])
        }
    }

    /// The SQL value a plain-SQL writer would bind, for the types stored as they are
    /// (integers, reals, text); nil for the rest, which go through the store.
    static func plainSQLValue(_ value: Value) -> SQLValue? {
        switch value {
        case .integer(let v): .integer(v)
        case .real(let v): .real(v)
        case .text(let v): .text(v)
        default: nil
        }
    }

    /// Creates a record of `entity`; a cascading parent is sometimes created first, so that
    /// the child's foreign key points at a temporary id. Returns the new id, or nil.
    private mutating func create(_ store: Store, entity: Int, depth: Int, into edits: inout [Edit]) throws -> Int64? {
        let fields = schema.entities[entity].fields
        var values = ContiguousArray<Value>()
        for (index, field) in fields.enumerated() {
            if case .reference(let target, let action) = roles[entity][index] {
                if action == .cascade, depth < 2, random.below(10) < 4,
                    let parent = try create(store, entity: target, depth: depth + 1, into: &edits)
                {
                    values.append(.integer(parent))
                } else if let parent = try pick(store, entity: target, protected: !cascades) {
                    values.append(.integer(parent.id))
                } else if action == .setNull {
                    values.append(.null)
                } else {
                    return nil
                }
            } else {
                serial += 1
                values.append(freshValue(field.type, current: .null, role: roles[entity][index]))
            }
        }
        let name = schema.entities[entity].name
        let id = try store.insert(name, values: values)
        let stamp = try store.record(name, id: id)!.stamps.first ?? .none
        edits.append(Edit(kind: .create, device: device, entity: entity, id: id, values: values, stamp: stamp, exempt: exempt))
        return id
    }

    private mutating func delete(_ store: Store, into edits: inout [Edit]) throws {
        let entity = random.below(schema.entities.count)
        var found: Record?
        for _ in 0..<4 {
            guard let record = try pick(store, entity: entity) else { return }
            let referenced = cascades ? false : try isReferenced(store, entity: entity, id: record.id)
            if cascades || (!isProtected(entity: entity, id: record.id) && !referenced) {
                found = record
                break
            }
        }
        guard let record = found else { return }
        try store.delete(schema.entities[entity].name, id: record.id)
        edits.append(Edit(kind: .delete, device: device, entity: entity, id: record.id, exempt: exempt))
    }

    /// A living record of `entity`: a third of the picks go to the ten lowest ids (hot
    /// records, edited by many devices at once), the rest anywhere, new records included.
    private mutating func pick(_ store: Store, entity: Int, protected: Bool = false) throws -> Record? {
        let name = schema.entities[entity].name
        if protected {
            let count = UInt64(seed.count(entity) + 1) / 2
            for _ in 0..<8 {
                let id = Int64(random.below(count)) * 2 + 1
                if isProtected(entity: entity, id: id), let record = try store.record(name, id: id), !record.isDeleted { return record }
            }
            return nil
        }
        let bounds = try store.database.rows("SELECT min(id), max(id) FROM \(Database.quote(name))")
        guard case .integer(let low)? = bounds.first?[0], case .integer(let high)? = bounds.first?[1] else { return nil }
        for attempt in 0..<8 {
            let hot = attempt < 4 && random.below(3) == 0 && high >= 1
            let id = hot ? Int64(1 + random.below(UInt64(min(10, high)))) : low + Int64(random.below(UInt64(high - low + 1)))
            if id != 0, let record = try store.record(name, id: id), !record.isDeleted { return record }
        }
        return nil
    }

    /// A seeded record with an odd id whose cascading parents are protected: never deleted
    /// unless `cascades` is on.
    func isProtected(entity: Int, id: Int64) -> Bool {
        guard id >= 1, id <= Int64(seed.count(entity)), id % 2 == 1 else { return false }
        let values = seed.values(entity: entity, id: id)
        for (index, role) in roles[entity].enumerated() {
            if case .reference(let target, .cascade) = role, case .integer(let parent) = values[index],
                !isProtected(entity: target, id: parent)
            {
                return false
            }
        }
        return true
    }

    /// Whether any local record references this one.
    func isReferenced(_ store: Store, entity: Int, id: Int64) throws -> Bool {
        for (child, fields) in roles.enumerated() {
            for (field, role) in fields.enumerated() {
                guard case .reference(let target, _) = role, target == entity else { continue }
                let column = Database.quote(schema.entities[child].fields[field].name)
                let sql = "SELECT 1 FROM \(Database.quote(schema.entities[child].name)) WHERE \(column) = ? LIMIT 1"
                if !(try store.database.rows(sql, [.integer(id)])).isEmpty { return true }
            }
        }
        return false
    }

    /// A value for a field, different from `current`.
    private mutating func freshValue(_ type: FieldType, current: Value, role: FieldRole = .lastEditWins) -> Value {
        let roll = random.next()
        switch (type, role) {
        case (.integer, .counter): return .integer(Int64(roll % 10))
        case (.textSet, _): return .textSet(TextSet(["d\(device)n\(serial)"]))
        case (.text, _): return .text("d\(device)n\(serial)")
        case (.integer, _): return .integer(current == .integer(Int64(roll % 1_000)) ? Int64(roll % 1_000) + 1 : Int64(roll % 1_000))
        case (.real, _): return .real(Double(serial) + Double(roll % 100) / 100)
        case (.date, _): return .date(Int64(roll % 2_000_000_000_000) + Int64(serial))
        case (.bool, _): return .bool(current != .bool(true))
        case (.blob, _): return .blob([UInt8(truncatingIfNeeded: serial)])
        case (.reference, _): return .null
        case (.attachment, _): return .simulatedAttachment(roll ^ UInt64(serial))
        }
    }
}
