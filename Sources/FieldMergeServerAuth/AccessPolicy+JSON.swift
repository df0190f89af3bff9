import FieldMerge
import FieldMergeJSON
import Foundation

extension AccessPolicy {
    /// Reads a policy document (`Specs/http.md`):
    ///
    /// ```json
    /// {"entities": {"tasks": {"write": ["editor"]}, "projects": {"write": ["admin"], "delete": []}},
    ///  "default": {"write": ["*"]}}
    /// ```
    ///
    /// Each rule has `write` and optionally `create`, `update`, `delete` and `read` (arrays
    /// of role names). Every entity named must be in `schema`; unknown keys are errors; a
    /// policy that lets a role read records whose references point at records it may not
    /// read is refused (``unreadableParent(in:)``). Optional `scopes` and `claims` give the
    /// scope rules (``scopes``; see `scopeRules(_:schema:)`), checked against `schema`.
    ///
    /// - Throws: `DocumentError` with the JSON path of the problem.
    public static func decode(_ data: Data, schema: Schema) throws(DocumentError) -> AccessPolicy {
        let document = try JSONValue.parse(data)
        let top = try object(document, at: "$", keys: ["entities", "default", "scopes", "claims"])
        var entities: [String: Rule] = [:]
        if let named = top["entities"] {
            for (entity, value) in try object(named, at: "$.entities", keys: nil) {
                let path = "$.entities.\(entity)"
                guard schema.entities.contains(where: { $0.name == entity }) else {
                    throw DocumentError(path: path, message: "the schema has no entity '\(entity)'")
                }
                entities[entity] = try rule(value, at: path)
            }
        }
        let policy = AccessPolicy(
            entities: entities, defaultRule: try top["default"].map { value throws(DocumentError) in try rule(value, at: "$.default") },
            scopes: try scopeRules(top, schema: schema))
        if let problem = policy.unreadableParent(in: schema) { throw DocumentError(path: "$", message: problem) }
        return policy
    }

    private static func rule(_ value: JSONValue, at path: String) throws(DocumentError) -> Rule {
        let fields = try object(value, at: path, keys: ["write", "create", "update", "delete", "read"])
        func roles(_ key: String) throws(DocumentError) -> Set<String>? {
            try fields[key].map { value throws(DocumentError) in try names(value, at: "\(path).\(key)", of: "role") }
        }
        guard let write = try roles("write") else { throw DocumentError(path: path, message: "a rule needs 'write' (an array of roles)") }
        return Rule(
            write: write, create: try roles("create"), update: try roles("update"), delete: try roles("delete"), read: try roles("read"))
    }

    /// The strings of the array `value`, each non-empty (`what`: "role", for messages).
    static func names(_ value: JSONValue, at path: String, of what: String) throws(DocumentError) -> Set<String> {
        guard case .array(let items) = value else { throw DocumentError(path: path, message: "expected an array of \(what) names") }
        var names: Set<String> = []
        for (index, item) in items.enumerated() {
            guard case .string(let name) = item, !name.isEmpty else {
                throw DocumentError(path: "\(path)[\(index)]", message: "expected a \(what) name (a non-empty string)")
            }
            names.insert(name)
        }
        return names
    }

    /// The members of the object `value`, refusing keys outside `keys` (when given).
    static func object(_ value: JSONValue, at path: String, keys: Set<String>?) throws(DocumentError) -> [String: JSONValue] {
        guard case .object(let members) = value else { throw DocumentError(path: path, message: "expected an object") }
        if let keys, let unknown = members.keys.sorted().first(where: { !keys.contains($0) }) {
            throw DocumentError(path: "\(path).\(unknown)", message: "unknown key; expected one of \(keys.sorted().joined(separator: ", "))")
        }
        return members
    }
}
