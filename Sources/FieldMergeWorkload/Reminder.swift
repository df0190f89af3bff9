/// One row of the benchmark entity `reminders`, fields in schema order.
public struct ReminderRow: Equatable, Sendable {
    public var title: String
    public var notes: String
    public var isCompleted: Bool
    public var priority: Int64
    public var dueDate: Int64
    public var listID: Int64
    public var position: Double
    public var flagged: Bool

    public init(
        title: String, notes: String, isCompleted: Bool, priority: Int64,
        dueDate: Int64, listID: Int64, position: Double, flagged: Bool
    ) {
        self.title = title
        self.notes = notes
        self.isCompleted = isCompleted
        self.priority = priority
        self.dueDate = dueDate
        self.listID = listID
        self.position = position
        self.flagged = flagged
    }

    /// The value of one field, by schema position.
    ///
    /// Setting a value of the wrong kind for the field is a programming error.
    public subscript(field: ReminderField) -> ReminderValue {
        get {
            switch field {
            case .title: return .text(title)
            case .notes: return .text(notes)
            case .isCompleted: return .bool(isCompleted)
            case .priority: return .integer(priority)
            case .dueDate: return .integer(dueDate)
            case .listID: return .integer(listID)
            case .position: return .real(position)
            case .flagged: return .bool(flagged)
            }
        }
        set {
            switch (field, newValue) {
            case (.title, .text(let v)): title = v
            case (.notes, .text(let v)): notes = v
            case (.isCompleted, .bool(let v)): isCompleted = v
            case (.priority, .integer(let v)): priority = v
            case (.dueDate, .integer(let v)): dueDate = v
            case (.listID, .integer(let v)): listID = v
            case (.position, .real(let v)): position = v
            case (.flagged, .bool(let v)): flagged = v
            default: preconditionFailure("value \(newValue) does not fit field \(field.name)")
            }
        }
    }
}

/// The fields of `reminders`, in schema order (the raw value is the schema position).
public enum ReminderField: Int, CaseIterable, Sendable {
    case title, notes, isCompleted, priority, dueDate, listID, position, flagged

    /// The field's name as written in digests (`id\tfield\tvalue\n`).
    public var name: String {
        switch self {
        case .title: return "title"
        case .notes: return "notes"
        case .isCompleted: return "isCompleted"
        case .priority: return "priority"
        case .dueDate: return "dueDate"
        case .listID: return "listID"
        case .position: return "position"
        case .flagged: return "flagged"
        }
    }
}

/// A field value of `reminders`.
public enum ReminderValue: Equatable, Sendable {
    case text(String)
    case bool(Bool)
    case integer(Int64)
    case real(Double)
}

/// One field write of a replica: the record (0-based index; its id is `record + 1`),
/// the field, and the new value.
public struct FieldWrite: Equatable, Sendable {
    /// 0-based record index into `Workload.base`.
    public var record: Int
    public var field: ReminderField
    public var value: ReminderValue

    public init(record: Int, field: ReminderField, value: ReminderValue) {
        self.record = record
        self.field = field
        self.value = value
    }

    /// The record's id (`record + 1`).
    public var id: Int64 { Int64(record) + 1 }
}
