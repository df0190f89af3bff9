import FieldMerge

/// Reads and writes schemas as JSON (the format is in `Specs/merge-semantics.md`).
///
/// ```json
/// { "entities": [ { "name": "reminders", "defaultStrategy": "lastEditWins",
///     "deletePolicy": "deleteWins",
///     "fields": [ { "name": "title", "type": "text" },
///                 { "name": "count", "type": "integer", "strategy": "counter" },
///                 { "name": "listID", "type": "reference", "references": "lists",
///                   "onDelete": "cascade" } ] } ] }
/// ```
public enum SchemaDocument {
    /// Builds a schema. Names of custom strategies are looked up in `customStrategies`.
    public static func decode(
        _ json: JSONValue, path: String = "$", customStrategies: [String: FieldStrategy] = [:],
        recordStrategies: [String: any RecordMergeStrategy] = [:]
    ) throws(DocumentError) -> Schema {
        try decode(json, path: path, Strategies(fields: customStrategies, records: recordStrategies))
    }

    /// The outline of a schema document (what `fieldmerge schema diff` compares): custom
    /// strategies and record rules are kept by name, without the code that runs them, so a
    /// tool can compare an app's schema files without the app.
    ///
    /// - Returns: The outline and the schema's version.
    public static func outline(_ json: JSONValue, path: String = "$") throws(DocumentError) -> (outline: SchemaOutline, version: Int) {
        let schema = try decode(json, path: path, Strategies(namesOnly: true))
        return (SchemaOutline(schema), schema.version)
    }

    /// The strategies a document may name beyond the built-in ones.
    struct Strategies {
        var fields: [String: FieldStrategy] = [:]
        var records: [String: any RecordMergeStrategy] = [:]
        /// Unknown names are kept as names (``outline(_:path:)``): the schema built is never run.
        var namesOnly = false

        func field(_ name: String, at path: String) throws(DocumentError) -> FieldStrategy {
            if let builtIn = FieldStrategy(builtIn: name) { return builtIn }
            if let strategy = fields[name] { return strategy }
            if namesOnly { return .custom(NameOnly(name: name)) }
            throw DocumentError(path: path, message: "unknown strategy '\(name)'")
        }

        func record(_ name: String) -> (any RecordMergeStrategy)? {
            records[name] ?? (namesOnly ? NameOnly(name: name) : nil)
        }
    }

    /// A strategy known by its name only, in a schema built to be outlined, never merged
    /// with (it keeps the field strategies' proposal if it ever were).
    struct NameOnly: FieldMergeStrategy, RecordMergeStrategy {
        let name: String
        func merge(_ input: FieldMergeInput) -> Value { input.remote }
        func merge(_ input: RecordMergeInput) -> ContiguousArray<Value> { input.proposal }
    }

    private static func decode(_ json: JSONValue, path: String, _ strategies: Strategies) throws(DocumentError) -> Schema {
        let reader = Reader(path: path, json)
        try reader.allowOnly(["entities", "version"])
        let version = try reader.has("version") ? try reader.integer("version") : 1
        guard version >= 1, version <= Int64(Int32.max) else { throw reader.error("version", "a schema version is 1 or more") }
        let entities = try reader.array("entities").map { (entity) throws(DocumentError) -> Entity in
            try decodeEntity(entity, strategies)
        }
        do {
            return try Schema(entities, version: Int(version))
        } catch {
            throw DocumentError(path: "\(path).entities", message: error.description)
        }
    }

    private static func decodeEntity(_ reader: Reader, _ strategies: Strategies) throws(DocumentError) -> Entity {
        try reader.allowOnly(["name", "fields", "defaultStrategy", "deletePolicy", "recordStrategy", "renamedFrom", "retired"])
        let name = try reader.string("name")
        let defaultStrategy = try reader.optionalString("defaultStrategy").map { (s) throws(DocumentError) in
            try strategies.field(s, at: reader.path + ".defaultStrategy")
        } ?? .lastEditWins
        let policyName = try reader.optionalString("deletePolicy") ?? DeletePolicy.deleteWins.rawValue
        guard let policy = DeletePolicy(rawValue: policyName) else {
            throw reader.error("deletePolicy", "unknown delete policy '\(policyName)'; expected one of "
                + DeletePolicy.allCases.map(\.rawValue).joined(separator: ", "))
        }
        var recordStrategy: (any RecordMergeStrategy)?
        if let ruleName = try reader.optionalString("recordStrategy") {
            guard let rule = strategies.record(ruleName) else {
                throw reader.error("recordStrategy", "unknown record strategy '\(ruleName)'")
            }
            recordStrategy = rule
        }
        let fields = try reader.array("fields").map { (field) throws(DocumentError) -> Field in
            try decodeField(field, strategies)
        }
        return Entity(
            name, fields: fields, defaultStrategy: defaultStrategy, deletePolicy: policy,
            recordStrategy: recordStrategy, renamedFrom: try reader.optionalString("renamedFrom"),
            retired: try reader.optionalBool("retired") ?? false)
    }

    private static func decodeField(_ reader: Reader, _ strategies: Strategies) throws(DocumentError) -> Field {
        try reader.allowOnly(["name", "type", "strategy", "references", "onDelete", "default", "renamedFrom", "retired"])
        let name = try reader.string("name")
        let typeName = try reader.string("type")
        let type: FieldType
        if let plain = FieldType(plainName: typeName) {
            type = plain
        } else if typeName == "reference" {
            let target = try reader.string("references")
            let actionName = try reader.optionalString("onDelete") ?? ReferenceAction.restrict.rawValue
            guard let action = ReferenceAction(rawValue: actionName) else {
                throw reader.error("onDelete", "unknown action '\(actionName)'; expected cascade, setNull or restrict")
            }
            type = .reference(to: target, onDelete: action)
        } else {
            throw reader.error("type", "unknown field type '\(typeName)'")
        }
        let strategy = try reader.optionalString("strategy").map { (s) throws(DocumentError) in
            try strategies.field(s, at: reader.path + ".strategy")
        }
        let defaultValue = try reader.optional("default").map { (json) throws(DocumentError) in
            try RecordDocument.decodeValue(json, type: type, path: reader.path + ".default")
        } ?? .null
        return Field(
            name, type, strategy: strategy, default: defaultValue, renamedFrom: try reader.optionalString("renamedFrom"),
            retired: try reader.optionalBool("retired") ?? false)
    }

    /// The JSON form of a schema (custom strategies by name).
    public static func encode(_ schema: Schema) -> JSONValue {
        var document: [String: JSONValue] = ["entities": .array(schema.entities.map { entity in
            var object: [String: JSONValue] = [
                "name": .string(entity.name),
                "defaultStrategy": .string(entity.defaultStrategy.name),
                "deletePolicy": .string(entity.deletePolicy.rawValue),
                "fields": .array(entity.fields.map(encodeField)),
            ]
            if let rule = entity.recordStrategy { object["recordStrategy"] = .string(rule.name) }
            if let old = entity.renamedFrom { object["renamedFrom"] = .string(old) }
            if entity.retired { object["retired"] = .bool(true) }
            return .object(object)
        })]
        if schema.version != 1 { document["version"] = .integer(Int64(schema.version)) }
        return .object(document)
    }

    private static func encodeField(_ field: Field) -> JSONValue {
        var object: [String: JSONValue] = ["name": .string(field.name), "type": .string(field.type.name)]
        if case .reference(let target, let action) = field.type {
            object["references"] = .string(target)
            object["onDelete"] = .string(action.rawValue)
        }
        if let strategy = field.strategy { object["strategy"] = .string(strategy.name) }
        if field.defaultValue != .null { object["default"] = RecordDocument.encodeValue(field.defaultValue) }
        if let old = field.renamedFrom { object["renamedFrom"] = .string(old) }
        if field.retired { object["retired"] = .bool(true) }
        return .object(object)
    }
}
