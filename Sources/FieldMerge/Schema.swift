/// One field of an entity.
public struct Field: Sendable, CustomStringConvertible {
    public var name: String
    public var type: FieldType
    /// The field's own strategy, or nil for the entity's default.
    public var strategy: FieldStrategy?
    /// The value records that exist when the field is added to a schema get (stamped older
    /// than any edit, so every real edit wins over it). Null unless given.
    public var defaultValue: Value
    /// The field's name in the schema version before, when this version renames it: the
    /// field keeps its values, stamps and pending edits (Specs/schema.md, "Evolution").
    public var renamedFrom: String?
    /// A field this version no longer syncs (Specs/schema.md, "Retiring a field"): it keeps
    /// its position, its column on a device is emptied and never sent or received, and the
    /// server keeps its values for clients of older versions, which still sync it.
    public var retired: Bool
    /// The app's own migration step when this version changes the field's type (Specs/
    /// schema.md, "The app's own step"): turns each value of the version before (of the old
    /// type, never null) into a value of this type, or null. Stores and the server apply it
    /// to every value they keep of the field; stamps stay.
    public var convertedFrom: (@Sendable (Value) -> Value)?

    public init(
        _ name: String, _ type: FieldType, strategy: FieldStrategy? = nil, default defaultValue: Value = .null,
        renamedFrom: String? = nil, retired: Bool = false, convertedFrom: (@Sendable (Value) -> Value)? = nil
    ) {
        self.name = name
        self.type = type
        self.strategy = strategy
        self.defaultValue = defaultValue
        self.renamedFrom = renamedFrom
        self.retired = retired
        self.convertedFrom = convertedFrom
    }

    public var description: String { "\(name): \(type.name)" }
}

/// A kind of record: its fields in order, and how its records merge.
public struct Entity: Sendable {
    /// The largest number of fields an entity may have: field sets travel as 64-bit masks.
    public static let maxFields = 64

    public var name: String
    /// The fields in schema order; records hold values and stamps in this order.
    public var fields: [Field]
    /// The strategy for fields that name none.
    public var defaultStrategy: FieldStrategy
    public var deletePolicy: DeletePolicy
    public var recordStrategy: (any RecordMergeStrategy)?
    /// The entity's name in the schema version before, when this version renames it.
    public var renamedFrom: String?
    /// An entity this version no longer syncs (Specs/schema.md, "Retiring an entity"): its
    /// table on a device is emptied and refuses writes, its records are never sent or
    /// received, and the server keeps them for clients of older versions, which still sync
    /// them. Fields of other entities that reference it must be retired too.
    public var retired: Bool

    public init(
        _ name: String, fields: [Field], defaultStrategy: FieldStrategy = .lastEditWins,
        deletePolicy: DeletePolicy = .deleteWins, recordStrategy: (any RecordMergeStrategy)? = nil,
        renamedFrom: String? = nil, retired: Bool = false
    ) {
        self.name = name
        self.renamedFrom = renamedFrom
        self.retired = retired
        self.fields = fields
        self.defaultStrategy = defaultStrategy
        self.deletePolicy = deletePolicy
        self.recordStrategy = recordStrategy
    }

    /// The position of the field named `name`, or nil.
    public func fieldIndex(_ name: String) -> Int? {
        fields.firstIndex { $0.name == name }
    }

    /// The strategy that decides field `index`.
    @inlinable
    public func strategy(at index: Int) -> FieldStrategy {
        fields[index].strategy ?? defaultStrategy
    }

    /// A mask with a bit set for every field.
    public var allFields: FieldMask { FieldMask.all(count: fields.count) }

    /// The fields this version no longer syncs (``Field/retired``).
    public var retiredFields: FieldMask { FieldMask(fields.indices.filter { fields[$0].retired }) }
}

/// A validated set of entities.
///
/// Validation rejects what would break storage or the wire format later: empty, duplicate
/// (also differing only in case, as SQL identifiers compare) or unsafe names, names the
/// protocol reserves, references to entities that do not exist, and strategies that cannot
/// decide the field's type.
public struct Schema: Sendable {
    public let entities: [Entity]
    /// The schema's version, 1 or more: a schema that changes takes a higher version, and
    /// stores and servers migrate their files to it (Specs/schema.md, "Evolution").
    public let version: Int
    private let index: [String: Int]

    public init(_ entities: [Entity], version: Int = 1) throws(MergeError) {
        guard version >= 1 else { throw .invalidVersion(version) }
        self.version = version
        var index: [String: Int] = [:]
        var folded: Set<String> = []
        for (position, entity) in entities.enumerated() {
            try Self.checkName(entity.name, entity: nil)
            guard folded.insert(Self.fold(entity.name)).inserted else {
                throw .duplicateEntity(entity.name)
            }
            index[entity.name] = position
        }
        let retired = Set(entities.filter(\.retired).map { Self.fold($0.name) })
        for entity in entities {
            try Self.validate(entity, entityNames: folded, retired: retired)
        }
        self.entities = entities
        self.index = index
    }

    /// The entity named `name`, or nil.
    public func entity(_ name: String) -> Entity? {
        index[name].map { entities[$0] }
    }

    /// The entity named `name`.
    public func requireEntity(_ name: String) throws(MergeError) -> Entity {
        guard let entity = entity(name) else { throw .unknownEntity(name) }
        return entity
    }

    /// Field names that the wire format and the store use for their own purposes.
    public static let reservedFieldNames: Set<String> = ["id", "revision"]

    /// The longest name accepted, in bytes.
    public static let maxNameLength = 64

    private static func validate(_ entity: Entity, entityNames: Set<String>, retired: Set<String>) throws(MergeError) {
        guard entity.fields.count <= Entity.maxFields else {
            throw .tooManyFields(entity: entity.name, count: entity.fields.count)
        }
        if !entity.defaultStrategy.isDefaultable {
            throw .strategyNotApplicable(
                entity: entity.name, field: "*", strategy: entity.defaultStrategy.name, type: "any")
        }
        var seen: Set<String> = []
        for field in entity.fields {
            try checkName(field.name, entity: entity.name)
            let key = fold(field.name)
            guard !reservedFieldNames.contains(key) else {
                throw .reservedName(entity: entity.name, name: field.name)
            }
            guard seen.insert(key).inserted else {
                throw .duplicateField(entity: entity.name, field: field.name)
            }
            if let target = field.type.referenceTarget, !entityNames.contains(fold(target)) {
                throw .unknownReferenceTarget(entity: entity.name, field: field.name, target: target)
            }
            if let target = field.type.referenceTarget, !entity.retired, !field.retired, retired.contains(fold(target)) {
                throw .referenceToRetiredEntity(entity: entity.name, field: field.name, target: target)
            }
            guard field.defaultValue.fits(field.type) else {
                throw .invalidDefault(entity: entity.name, field: field.name, expected: field.type.name, got: field.defaultValue.kind.rawValue)
            }
            if let old = field.renamedFrom { try checkName(old, entity: entity.name) }
            let strategy = field.strategy ?? entity.defaultStrategy
            guard strategy.applies(to: field.type) else {
                throw .strategyNotApplicable(
                    entity: entity.name, field: field.name, strategy: strategy.name, type: field.type.name)
            }
        }
    }

    /// Names are ASCII letters, digits and underscores, start with a letter or an
    /// underscore, hold at most ``maxNameLength`` bytes, and do not start with `__` (kept
    /// for the protocol's own keys) or `sqlite_` (kept by SQLite).
    static func checkName(_ name: String, entity: String?) throws(MergeError) {
        let bytes = Array(name.utf8)
        func fail(_ reason: String) -> MergeError { .invalidName(entity: entity, name: name, reason: reason) }
        guard !bytes.isEmpty else { throw fail("empty") }
        guard bytes.count <= maxNameLength else { throw fail("longer than \(maxNameLength) bytes") }
        for (offset, byte) in bytes.enumerated() {
            let letter = (byte >= 65 && byte <= 90) || (byte >= 97 && byte <= 122) || byte == 95
            let digit = byte >= 48 && byte <= 57
            guard letter || (digit && offset > 0) else {
                throw fail("only ASCII letters, digits and '_' are allowed, starting with a letter or '_'")
            }
        }
        let lower = fold(name)
        if lower.hasPrefix("__") { throw fail("names starting with '__' are reserved") }
        if lower.hasPrefix("sqlite_") { throw fail("names starting with 'sqlite_' are reserved") }
    }

    static func fold(_ name: String) -> String { name.lowercased() }
}

extension FieldStrategy {
    /// Type-specific strategies cannot be an entity's default, which applies to every field.
    var isDefaultable: Bool {
        switch self {
        case .counter, .union, .text: return false
        default: return true
        }
    }
}
