import FieldMerge

/// The document `fieldmerge merge` reads and the conformance vectors use: a schema, an
/// entity, the three records and an optional resolution stamp; and the report it writes.
public struct MergeDocument {
    public var schema: Schema
    public var entity: Entity
    public var ancestor: Record?
    public var local: Record
    public var remote: Record
    public var context: MergeContext

    /// Reads a merge request.
    public init(
        _ json: JSONValue, customStrategies: [String: FieldStrategy] = [:],
        recordStrategies: [String: any RecordMergeStrategy] = [:]
    ) throws(DocumentError) {
        let reader = Reader(path: "$", json)
        try reader.allowOnly(Self.keys)
        schema = try SchemaDocument.decode(
            reader.child("schema").json, path: "$.schema", customStrategies: customStrategies, recordStrategies: recordStrategies)
        let name = try reader.string("entity")
        guard let entity = schema.entity(name) else {
            throw reader.error("entity", "the schema has no entity '\(name)'")
        }
        self.entity = entity
        if try reader.optional("ancestor") != nil {
            ancestor = try RecordDocument.decode(reader.child("ancestor"), entity: entity)
        } else {
            ancestor = nil
        }
        local = try RecordDocument.decode(reader.child("local"), entity: entity)
        remote = try RecordDocument.decode(reader.child("remote"), entity: entity)
        let stamp = try reader.optional("resolutionStamp").map { (json) throws(DocumentError) in
            try RecordDocument.decodeStamp(json, path: "$.resolutionStamp")
        }
        context = MergeContext(resolutionStamp: stamp ?? .none)
    }

    /// The keys a merge document may have; `name`, `description` and `expected` are the
    /// conformance vectors' own.
    public static let keys: Set<String> = [
        "schema", "entity", "ancestor", "local", "remote", "resolutionStamp", "name", "description", "expected",
    ]

    /// Runs the merge and returns the report.
    public func run() throws(DocumentError) -> JSONValue {
        do {
            let result = try ThreeWayMerge.merge(entity, ancestor: ancestor, local: local, remote: remote, context: context)
            return Self.report(result, entity: entity)
        } catch {
            throw DocumentError(path: "$", message: error.description)
        }
    }

    /// The JSON report of a merge result.
    public static func report(_ result: MergeResult, entity: Entity) -> JSONValue {
        func names(_ mask: FieldMask) -> JSONValue { .array(mask.map { .string(entity.fields[$0].name) }) }
        return .object([
            "merged": RecordDocument.encode(result.merged, entity: entity),
            "upload": names(result.upload),
            "writeLocally": names(result.writeLocally),
            "deletesRemotely": .bool(result.deletesRemotely),
            "deletesLocally": .bool(result.deletesLocally),
            "recreatesRemotely": .bool(result.recreatesRemotely),
            "restoresLocally": .bool(result.restoresLocally),
            "conflicts": .array(result.conflicts.map(conflict)),
        ])
    }

    private static func conflict(_ conflict: FieldConflict) -> JSONValue {
        func optional(_ value: Value?) -> JSONValue { value.map(RecordDocument.encodeValue) ?? .null }
        return .object([
            "entity": .string(conflict.entity), "id": .integer(conflict.id), "kind": .string(conflict.kind.rawValue),
            "field": conflict.field.map(JSONValue.string) ?? .null,
            "ancestor": optional(conflict.ancestor),
            "ancestorStamp": conflict.ancestorStamp.map(RecordDocument.encodeStamp) ?? .null,
            "local": optional(conflict.local), "localStamp": RecordDocument.encodeStamp(conflict.localStamp),
            "remote": optional(conflict.remote), "remoteStamp": RecordDocument.encodeStamp(conflict.remoteStamp),
            "strategy": .string(conflict.strategy), "winner": .string(conflict.winner.rawValue),
            "result": optional(conflict.result),
            "fallback": conflict.fallback.map { .string($0.rawValue) } ?? .null,
        ])
    }
}
