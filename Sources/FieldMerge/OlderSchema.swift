/// An older version of the current schema, as a server keeps it to answer clients that have
/// not upgraded yet (Specs/schema.md, "Mixed-version fleets").
///
/// Records keep values by position and migrations only append fields, so a field of the
/// older version sits at the same position in the current one, under its current name if
/// it was renamed since. An entity may have been renamed, and may sit elsewhere:
/// ``currentNames`` says where each one went.
public struct OlderSchema: Sendable {
    /// The older version, rebuilt from what the server recorded of it. Its strategies are
    /// names only (a custom one merges as `lastEditWins`): the server merges by the current
    /// schema's rules, never by these.
    public let schema: Schema
    /// Per entity of ``schema``, in order: its name in the current schema.
    public let currentNames: [String]

    /// - Throws: ``MergeError`` when the outline is not a valid schema, or `currentNames`
    ///   does not name one entity of the current schema per older entity.
    public init(_ outline: SchemaOutline, version: Int, currentNames: [String]) throws(MergeError) {
        guard currentNames.count == outline.entities.count else {
            throw .batchMismatch("schema version \(version) has \(outline.entities.count) entities, but \(currentNames.count) current names")
        }
        schema = try outline.schema(version: version)
        self.currentNames = currentNames
    }

    /// The older version's fingerprint, which its clients send.
    public var fingerprint: String { schema.fingerprint }
}

extension SchemaOutline {
    /// The schema these lines describe, at `version`. Built-in strategies are themselves; any
    /// other name becomes a strategy of that name that decides as `lastEditWins` (a record
    /// rule, one that keeps the field-wise proposal), so the outline, and the fingerprint,
    /// come out the same.
    ///
    /// - Throws: ``MergeError`` for a type, rule or name the lines do not describe validly.
    public func schema(version: Int) throws(MergeError) -> Schema {
        var result: [Entity] = []
        for entity in entities {
            var defaultStrategy = FieldStrategy.lastEditWins, deletePolicy = DeletePolicy.deleteWins
            var recordStrategy: (any RecordMergeStrategy)?
            for rule in entity.rules.split(separator: " ") {
                let parts = rule.split(separator: "=", maxSplits: 1).map(String.init)
                guard parts.count == 2 else { throw .batchMismatch("entity \(entity.name): unreadable rule '\(rule)'") }
                switch parts[0] {
                case "default": defaultStrategy = Self.strategy(parts[1])
                case "delete":
                    guard let policy = DeletePolicy(rawValue: parts[1]) else {
                        throw .batchMismatch("entity \(entity.name): unknown delete policy '\(parts[1])'")
                    }
                    deletePolicy = policy
                case "record": recordStrategy = ClosureRecordStrategy(name: parts[1]) { $0.proposal }
                default: throw .batchMismatch("entity \(entity.name): unknown rule '\(parts[0])'")
                }
            }
            var fields: [Field] = []
            for field in entity.fields {
                fields.append(Field(
                    field.name, try Self.type(field, entity: entity.name), strategy: field.strategy.map(Self.strategy),
                    retired: field.retired))
            }
            result.append(Entity(entity.name, fields: fields, defaultStrategy: defaultStrategy, deletePolicy: deletePolicy,
                                 recordStrategy: recordStrategy, retired: entity.retired))
        }
        return try Schema(result, version: version)
    }

    private static func strategy(_ name: String) -> FieldStrategy {
        FieldStrategy(builtIn: name) ?? .custom(name) { $0.lastEdit }
    }

    private static func type(_ field: FieldOutline, entity: String) throws(MergeError) -> FieldType {
        if let plain = FieldType(plainName: field.type) { return plain }
        switch field.type {
        case "reference":
            guard let target = field.target, let action = field.onDelete.flatMap(ReferenceAction.init(rawValue:)) else {
                throw .batchMismatch("field \(entity).\(field.name): a reference without its target and delete rule")
            }
            return .reference(to: target, onDelete: action)
        default:
            throw .batchMismatch("field \(entity).\(field.name): unknown type '\(field.type)'")
        }
    }
}
