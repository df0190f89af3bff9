/// What a referencing record does when the record it points at is deleted.
public enum ReferenceAction: String, Hashable, Sendable, CaseIterable {
    /// Delete the referencing record too.
    case cascade
    /// Set the reference to null.
    case setNull
    /// Refuse the delete while references exist.
    case restrict
}

/// The type of a field.
public enum FieldType: Hashable, Sendable {
    case integer
    case real
    case text
    case bool
    /// Milliseconds since the Unix epoch, UTC.
    case date
    case blob
    /// The id of a record of entity `entity`, or null.
    case reference(to: String, onDelete: ReferenceAction)
    /// A set of strings (see ``TextSet``).
    case textSet

    /// A short name for messages and documents: `integer`, `reference`, ...
    public var name: String {
        switch self {
        case .integer: return "integer"
        case .real: return "real"
        case .text: return "text"
        case .bool: return "bool"
        case .date: return "date"
        case .blob: return "blob"
        case .reference: return "reference"
        case .textSet: return "textSet"
        }
    }

    /// The kind of value a field of this type holds (besides null).
    public var valueKind: ValueKind {
        switch self {
        case .integer, .reference: return .integer
        case .real: return .real
        case .text: return .text
        case .bool: return .bool
        case .date: return .date
        case .blob: return .blob
        case .textSet: return .textSet
        }
    }

    /// The target entity of a reference, or nil.
    public var referenceTarget: String? {
        if case .reference(let target, _) = self { return target }
        return nil
    }
}
