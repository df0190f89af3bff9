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
    /// A reference to bytes kept beside the records (a photo, a PDF): text in the one form
    /// ``AttachmentReference`` parses and writes, `sha256:<hex>;<size>;<media type>`.
    /// Specs/attachments.md.
    case attachment

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
        case .attachment: return "attachment"
        }
    }

    /// The kind of value a field of this type holds (besides null).
    public var valueKind: ValueKind {
        switch self {
        case .integer, .reference: return .integer
        case .real: return .real
        case .text, .attachment: return .text
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

    /// Why `value` cannot be stored in a field of this type although its kind fits: for an
    /// attachment, text that is not a canonical ``AttachmentReference``; nil when it can.
    public func refusal(of value: Value) -> String? {
        guard case .attachment = self, case .text(let text) = value else { return nil }
        do {
            _ = try AttachmentReference(parsing: text)
            return nil
        } catch {
            return error.description
        }
    }
}
