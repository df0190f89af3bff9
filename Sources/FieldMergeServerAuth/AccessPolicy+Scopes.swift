import FieldMerge
import FieldMergeJSON
import FieldMergeServer

extension AccessPolicy {
    /// The scope rules of a policy document's top-level `scopes` and `claims` (nil without
    /// `scopes`), checked against `schema` with `ScopeRules/validate(against:)`:
    ///
    /// ```json
    /// "claims": ["teams"],
    /// "scopes": {"project": {"root": "projects", "members": {"tasks": "projectID", "notes": "taskID"},
    ///   "grants": [{"through": "memberships", "reference": "projectID", "where": {"userID": {"claim": "sub"}}},
    ///              {"where": {"ownerID": {"claim": "sub"}, "archived": false}},
    ///              {"roles": ["admin"]}, {"claim": "teams"},
    ///              {"subscribe": {"where": {"archived": true}, "roles": ["member"]}}]}}
    /// ```
    ///
    /// Scopes come in the order of their names; a `where`'s conditions in the order of their
    /// fields.
    static func scopeRules(_ top: [String: JSONValue], schema: Schema) throws(DocumentError) -> ScopeRules? {
        guard let document = top["scopes"] else {
            if top["claims"] != nil {
                throw DocumentError(path: "$.claims", message: "custom claims are for scope rules, and the policy has no 'scopes'")
            }
            return nil
        }
        let claims = try top["claims"].map { value throws(DocumentError) in try names(value, at: "$.claims", of: "claim") } ?? []
        if let name = claims.sorted().first(where: SyncTokenClaims.namedClaims.contains) {
            throw DocumentError(
                path: "$.claims",
                message: "'\(name)' is not a custom claim (sub, tenant and roles are built in; exp, nbf, iat, iss, aud and jti are the token's own)")
        }
        var scopes: [SyncScope] = []
        for (name, value) in try object(document, at: "$.scopes", keys: nil).sorted(by: { $0.key < $1.key }) {
            scopes.append(try scope(name, value, at: "$.scopes.\(name)"))
        }
        let rules = ScopeRules(scopes, claims: claims)
        do throws(ScopeRuleError) {
            try rules.validate(against: schema)
        } catch {
            throw DocumentError(path: "$." + error.path, message: error.message)
        }
        return rules
    }

    private static func scope(_ name: String, _ value: JSONValue, at path: String) throws(DocumentError) -> SyncScope {
        let fields = try object(value, at: path, keys: ["root", "members", "grants"])
        let root = try string(fields["root"], at: "\(path).root", "the root entity's name")
        var members: [String: String] = [:]
        if let named = fields["members"] {
            for (member, field) in try object(named, at: "\(path).members", keys: nil) {
                members[member] = try string(field, at: "\(path).members.\(member)", "the name of the member's reference toward the root")
            }
        }
        guard case .array(let items)? = fields["grants"] else {
            throw DocumentError(path: "\(path).grants", message: "expected an array of grants")
        }
        var grants: [SyncScope.Grant] = []
        for (index, item) in items.enumerated() {
            grants.append(try grant(item, at: "\(path).grants[\(index)]"))
        }
        return SyncScope(name, root: root, members: members, grants: grants)
    }

    /// One grant: exactly one of the five shapes.
    private static func grant(_ value: JSONValue, at path: String) throws(DocumentError) -> SyncScope.Grant {
        let fields = try object(value, at: path, keys: ["through", "reference", "where", "roles", "claim", "subscribe"])
        switch Set(fields.keys) {
        case ["subscribe"]:
            // {"subscribe": {"where": {...}, "roles": [...]}}, both optional.
            let at = "\(path).subscribe"
            let options = try object(fields["subscribe"]!, at: at, keys: ["where", "roles"])
            return .subscribe(
                roles: try options["roles"].map { value throws(DocumentError) in try names(value, at: "\(at).roles", of: "role") },
                where: try options["where"].map { value throws(DocumentError) in try conditions(value, at: "\(at).where") } ?? [])
        case ["roles"]:
            return .roles(try names(fields["roles"]!, at: "\(path).roles", of: "role"))
        case ["claim"]:
            return .claim(try string(fields["claim"], at: "\(path).claim", "a claim's name"))
        case ["where"]:
            return .roots(where: try conditions(fields["where"]!, at: "\(path).where"))
        case ["through", "reference", "where"]:
            return .through(
                entity: try string(fields["through"], at: "\(path).through", "an entity's name"),
                reference: try string(fields["reference"], at: "\(path).reference", "the name of its reference to the root"),
                where: try conditions(fields["where"]!, at: "\(path).where"))
        default:
            let keys = fields.isEmpty ? "none" : fields.keys.sorted().joined(separator: ", ")
            throw DocumentError(
                path: path,
                message: "a grant has exactly one of the shapes {through, reference, where}, {where}, {roles}, {claim} and {subscribe}; this one has \(keys)")
        }
    }

    /// A `where` object: each field equal to `{"claim": name}` or to an integer, string or bool.
    private static func conditions(_ value: JSONValue, at path: String) throws(DocumentError) -> [SyncScope.Condition] {
        var conditions: [SyncScope.Condition] = []
        for (field, operand) in try object(value, at: path, keys: nil).sorted(by: { $0.key < $1.key }) {
            let at = "\(path).\(field)"
            switch operand {
            case .object:
                let claim = try object(operand, at: at, keys: ["claim"])["claim"]
                conditions.append(SyncScope.Condition(field, .claim(try string(claim, at: "\(at).claim", "a claim's name"))))
            case .integer(let value): conditions.append(SyncScope.Condition(field, .value(.integer(value))))
            case .string(let value): conditions.append(SyncScope.Condition(field, .value(.text(value))))
            case .bool(let value): conditions.append(SyncScope.Condition(field, .value(.bool(value))))
            default:
                throw DocumentError(path: at, message: "expected {\"claim\": name}, an integer, a string or a bool")
            }
        }
        return conditions
    }

    private static func string(_ value: JSONValue?, at path: String, _ what: String) throws(DocumentError) -> String {
        guard case .string(let string)? = value, !string.isEmpty else {
            throw DocumentError(path: path, message: "expected \(what) (a non-empty string)")
        }
        return string
    }
}
