/// Whether and how a file made with one schema version moves to another: the rules every
/// store and server applies when it opens (Specs/schema.md, "Evolution").
public enum SchemaMigration {
    /// Why a file cannot be opened with a schema.
    public struct Refusal: Error, Sendable, CustomStringConvertible {
        /// The recorded schema cannot be read back (a damaged file).
        public var isDamaged = false
        public var message: String
        public var description: String { message }
    }

    /// The changes that move a file recorded with `lines` (``SchemaOutline/lines``) at
    /// `version` to `schema`; empty when it already has it (a higher version with the same
    /// entities only records the new version).
    ///
    /// - Throws: ``Refusal`` naming what differs: a file of a newer version, a schema changed
    ///   under the same version, or changes no file makes on its own (``SchemaChange/isSafe``).
    public static func plan(lines: [String], version: Int, to schema: Schema) throws(Refusal) -> [SchemaChange] {
        let outline = SchemaOutline(schema)
        if version > schema.version {
            throw Refusal(message: "the file has schema version \(version), newer than this schema's \(schema.version): "
                + "an older version of the app cannot open it")
        }
        if lines == outline.lines { return [] }
        guard let old = SchemaOutline(lines: lines) else {
            throw Refusal(isDamaged: true, message: "the schema recorded in the file cannot be read")
        }
        let changes = old.changes(to: outline)
        guard version < schema.version else {
            throw Refusal(message: "the file was made with another schema of the same version \(schema.version): "
                + changes.map(\.description).joined(separator: "; ") + "; a changed schema needs a higher version")
        }
        let unsafe = changes.filter { !$0.isSafe }
        guard unsafe.isEmpty else {
            throw Refusal(message: "the file cannot move from schema version \(version) to \(schema.version) on its own: "
                + unsafe.map(\.description).joined(separator: "; "))
        }
        return changes
    }
}

extension Stamp {
    /// The stamp of a field's default value in records that existed when the field was
    /// added: clock 0, older than any edit, so every real edit wins over it; replica 1, so
    /// that it is not ``none``, which on the wire means "no stamp" (a server stamps such a
    /// field itself).
    public static let schemaDefault = Stamp(clock: 0, replica: ReplicaID(1))
}

extension SchemaMigration {
    /// The changes of a migration in the order a file makes them: entity renames first (the
    /// rest names entities by their new names), then field renames, then added fields (per
    /// entity, how many at its end), then added entities. Rule changes need nothing stored.
    public struct Steps: Sendable {
        public var entityRenames: [(from: String, to: String)] = []
        public var fieldRenames: [(entity: String, from: String, to: String)] = []
        public var addedFields: [(entity: Entity, count: Int)] = []
        public var addedEntities: [Entity] = []
        /// Fields retired, by entity and position.
        public var retiredFields: [(entity: Entity, field: Int)] = []
        /// Entities retired.
        public var retiredEntities: [Entity] = []
        /// Fields whose type changed, by entity and position, with the type they had: each
        /// value goes through the field's ``Field/convertedFrom``.
        public var convertedFields: [(entity: Entity, field: Int, from: FieldType)] = []

        public init(_ changes: [SchemaChange], in schema: Schema) {
            var added: [String: Int] = [:]
            for change in changes {
                switch change.kind {
                case .renameEntity(let from, let to): entityRenames.append((from, to))
                case .renameField(let entity, let from, let to): fieldRenames.append((entity, from, to))
                case .addField(let entity, _): added[entity, default: 0] += 1
                case .addEntity(let name): if let entity = schema.entity(name) { addedEntities.append(entity) }
                case .retireField(let entity, let field):
                    if let entity = schema.entity(entity), let index = entity.fieldIndex(field) { retiredFields.append((entity, index)) }
                case .convertField(let entity, let field, let from, _, _):
                    if let entity = schema.entity(entity), let index = entity.fieldIndex(field), let type = FieldType(plainName: from) {
                        convertedFields.append((entity, index, type))
                    }
                case .retireEntity(let name): if let entity = schema.entity(name) { retiredEntities.append(entity) }
                case .changeEntityRules, .changeFieldRules, .unsupported: break
                }
            }
            addedFields = added.sorted { $0.key < $1.key }.compactMap { name, count in schema.entity(name).map { ($0, count) } }
        }
    }
}

extension FieldType {
    /// The type named `name` (``name``), for every type but a reference.
    public init?(plainName name: String) {
        switch name {
        case "integer": self = .integer
        case "real": self = .real
        case "text": self = .text
        case "bool": self = .bool
        case "date": self = .date
        case "blob": self = .blob
        case "textSet": self = .textSet
        case "attachment": self = .attachment
        default: return nil
        }
    }
}

extension Field {
    /// The app's conversion of a value of the version before, checked: null stays null, and
    /// a result that is not of this field's type is an error naming the field.
    public func convert(_ value: Value, entity: String) throws(MergeError) -> Value {
        guard value != .null, let convertedFrom else { return value }
        let converted = convertedFrom(value)
        guard converted.fits(type) else {
            throw .invalidConversion(entity: entity, field: name, expected: type.name, got: converted.kind.rawValue)
        }
        return converted
    }
}
