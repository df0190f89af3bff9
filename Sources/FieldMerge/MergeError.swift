/// What the core refuses: invalid schemas and records that do not fit their entity.
public enum MergeError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A name is empty, too long, has characters other than ASCII letters, digits and
    /// underscores, or uses a reserved prefix. `entity` is nil for an entity's own name.
    case invalidName(entity: String?, name: String, reason: String)
    case reservedName(entity: String, name: String)
    case duplicateEntity(String)
    case duplicateField(entity: String, field: String)
    case unknownEntity(String)
    case unknownField(entity: String, field: String)
    case unknownReferenceTarget(entity: String, field: String, target: String)
    case strategyNotApplicable(entity: String, field: String, strategy: String, type: String)
    case tooManyFields(entity: String, count: Int)
    /// A record holds a different number of values or stamps than its entity has fields.
    case shapeMismatch(entity: String, id: Int64, expected: Int, values: Int, stamps: Int)
    /// The records of one merge have different ids.
    case idMismatch(entity: String, ancestor: Int64?, local: Int64, remote: Int64)
    /// A value does not fit its field's type.
    case typeMismatch(entity: String, id: Int64, field: String, expected: String, got: String)
    /// The batches of a batch merge have different counts or field counts.
    case batchMismatch(String)
    /// A schema version below 1.
    case invalidVersion(Int)
    /// A field's default value of another type than the field's.
    case invalidDefault(entity: String, field: String, expected: String, got: String)
    /// The app's conversion of a field's values (``Field/convertedFrom``) gave a value of
    /// another type than the field's.
    case invalidConversion(entity: String, field: String, expected: String, got: String)
    /// A field that is synced references a retired entity (``Entity/retired``), which
    /// devices keep empty: the field must be retired too.
    case referenceToRetiredEntity(entity: String, field: String, target: String)

    public var description: String {
        switch self {
        case let .invalidName(entity, name, reason):
            return "invalid name '\(name)'\(entity.map { " in entity '\($0)'" } ?? ""): \(reason)"
        case let .reservedName(entity, name):
            return "field name '\(name)' in entity '\(entity)' is reserved by the protocol"
        case let .duplicateEntity(name):
            return "entity '\(name)' is declared twice (names compare case-insensitively)"
        case let .duplicateField(entity, field):
            return "field '\(field)' is declared twice in entity '\(entity)' (names compare case-insensitively)"
        case let .unknownEntity(name):
            return "unknown entity '\(name)'"
        case let .unknownField(entity, field):
            return "entity '\(entity)' has no field '\(field)'"
        case let .unknownReferenceTarget(entity, field, target):
            return "field '\(entity).\(field)' references unknown entity '\(target)'"
        case let .strategyNotApplicable(entity, field, strategy, type):
            return "strategy '\(strategy)' cannot decide field '\(entity).\(field)' of type \(type)"
        case let .tooManyFields(entity, count):
            return "entity '\(entity)' has \(count) fields; at most \(Entity.maxFields) are supported"
        case let .shapeMismatch(entity, id, expected, values, stamps):
            return "record \(entity)#\(id) has \(values) values and \(stamps) stamps; the entity has \(expected) fields"
        case let .idMismatch(entity, ancestor, local, remote):
            return "records of one \(entity) merge differ in id: ancestor \(ancestor.map(String.init) ?? "none"), local \(local), remote \(remote)"
        case let .typeMismatch(entity, id, field, expected, got):
            return "record \(entity)#\(id) field '\(field)' expects \(expected), got \(got)"
        case let .invalidDefault(entity, field, expected, got):
            return "field '\(entity).\(field)' of type \(expected) cannot default to a \(got)"
        case let .invalidConversion(entity, field, expected, got):
            return "the conversion of field '\(entity).\(field)' to \(expected) gave a \(got)"
        case let .referenceToRetiredEntity(entity, field, target):
            return "field '\(entity).\(field)' references retired entity '\(target)', which devices keep empty: retire the field too"
        case let .invalidVersion(version):
            return "schema version \(version): versions start at 1"
        case let .batchMismatch(message):
            return "batch merge: \(message)"
        }
    }
}
