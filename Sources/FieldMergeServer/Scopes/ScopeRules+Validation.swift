import FieldMerge

extension ScopeRules {
    /// Checks the rules against `schema`: every scope, entity, field and claim they name
    /// exists, each entity is in one scope at most, member references lead to the root,
    /// constants have their field's type, and no record a user may hold can reference one
    /// the user may not (Specs/scopes.md, "References").
    ///
    /// - Throws: ``ScopeRuleError`` with the path of the first problem.
    public func validate(against schema: Schema) throws(ScopeRuleError) {
        _ = try ScopePlan(self, schema: schema)
    }
}

/// The rules resolved against a schema: what the server uses.
struct ScopePlan: Sendable {
    /// Where an entity stands in the scopes.
    enum Place: Sendable, Equatable {
        /// In no scope: every user holds its records.
        case unscoped
        /// The root of scope `scope`.
        case root(scope: Int)
        /// A member of `scope` whose field `field` references entity `parent` (position).
        case member(scope: Int, field: Int, parent: Int)

        var scope: Int? {
            switch self {
            case .unscoped: nil
            case .root(let scope), .member(let scope, _, _): scope
            }
        }
    }

    struct Condition: Sendable {
        /// The field's position, or nil for `id`.
        var field: Int?
        var operand: SyncScope.Operand
        var type: FieldType?
    }

    enum Grant: Sendable {
        case roles(Set<String>)
        case roots([Condition])
        case through(entity: Int, reference: Int, [Condition])
        case claim(String)
        case subscribe(roles: Set<String>?, [Condition])
    }

    struct Scope: Sendable {
        var name: String
        var root: Int
        var grants: [Grant]
        /// The scope's entities (root first), parents before children.
        var entities: [Int]
    }

    let scopes: [Scope]
    /// By entity position.
    let places: [Place]

    init(_ rules: ScopeRules, schema: Schema) throws(ScopeRuleError) {
        var positions: [String: Int] = [:]
        for (position, entity) in schema.entities.enumerated() { positions[entity.name] = position }
        var places = [Place](repeating: .unscoped, count: schema.entities.count)
        var names: Set<String> = []
        let claims = rules.claims.union(ScopeRules.builtInClaims)
        for (number, scope) in rules.scopes.enumerated() {
            let path = "scopes.\(scope.name)"
            guard !scope.name.isEmpty, scope.name.utf8.allSatisfy(Self.isNameByte) else {
                throw ScopeRuleError(path: "scopes", message: "'\(scope.name)' is not a scope name (letters, digits, _, - and . only)")
            }
            guard names.insert(scope.name).inserted else { throw ScopeRuleError(path: path, message: "two scopes are named '\(scope.name)'") }
            guard let root = positions[scope.root] else {
                throw ScopeRuleError(path: "\(path).root", message: "the schema has no entity '\(scope.root)'")
            }
            try Self.claim(root, in: &places, scope: number, schema: schema, path: "\(path).root")
            places[root] = .root(scope: number)
            for (member, field) in scope.members.sorted(by: { $0.key < $1.key }) {
                let memberPath = "\(path).members.\(member)"
                guard let position = positions[member] else {
                    throw ScopeRuleError(path: memberPath, message: "the schema has no entity '\(member)'")
                }
                try Self.claim(position, in: &places, scope: number, schema: schema, path: memberPath)
                let entity = schema.entities[position]
                guard let index = entity.fields.firstIndex(where: { $0.name == field }) else {
                    throw ScopeRuleError(path: memberPath, message: "\(member) has no field '\(field)'")
                }
                guard let target = entity.fields[index].type.referenceTarget, let parent = positions[target] else {
                    throw ScopeRuleError(path: memberPath, message: "\(member).\(field) is not a reference")
                }
                places[position] = .member(scope: number, field: index, parent: parent)
            }
        }
        // Every member leads to its scope's root.
        for (number, scope) in rules.scopes.enumerated() {
            for member in scope.members.keys.sorted() {
                var position = positions[member]!, steps = 0
                while case .member(_, _, let parent) = places[position] {
                    guard places[parent].scope == number, steps <= schema.entities.count else {
                        let field = scope.members[member]!
                        throw ScopeRuleError(
                            path: "scopes.\(scope.name).members.\(member)",
                            message: steps > schema.entities.count
                                ? "the members' references go round in a circle and never reach the root \(scope.root)"
                                : "\(member).\(field) leads to \(schema.entities[parent].name), which is neither the root nor a member of '\(scope.name)'")
                    }
                    position = parent
                    steps += 1
                }
            }
        }
        var compiled: [Scope] = []
        for scope in rules.scopes {
            let root = positions[scope.root]!
            var grants: [Grant] = []
            guard !scope.grants.isEmpty else {
                throw ScopeRuleError(path: "scopes.\(scope.name).grants", message: "a scope needs at least one grant (else nobody holds its records)")
            }
            for (index, grant) in scope.grants.enumerated() {
                let path = "scopes.\(scope.name).grants[\(index)]"
                switch grant {
                case .roles(let roles):
                    guard !roles.isEmpty, !roles.contains("") else { throw ScopeRuleError(path: "\(path).roles", message: "expected role names") }
                    grants.append(.roles(roles))
                case .roots(let conditions):
                    guard !conditions.isEmpty else {
                        throw ScopeRuleError(path: "\(path).where", message: "a grant by the root's fields needs at least one condition")
                    }
                    grants.append(.roots(try Self.conditions(conditions, of: schema.entities[root], claims: claims, path: "\(path).where")))
                case .through(let entityName, let reference, let conditions):
                    guard let position = positions[entityName] else {
                        throw ScopeRuleError(path: "\(path).through", message: "the schema has no entity '\(entityName)'")
                    }
                    let entity = schema.entities[position]
                    guard let field = entity.fields.firstIndex(where: { $0.name == reference }) else {
                        throw ScopeRuleError(path: "\(path).reference", message: "\(entityName) has no field '\(reference)'")
                    }
                    guard entity.fields[field].type.referenceTarget == scope.root else {
                        throw ScopeRuleError(path: "\(path).reference", message: "\(entityName).\(reference) is not a reference to the root \(scope.root)")
                    }
                    guard !conditions.isEmpty else {
                        throw ScopeRuleError(path: "\(path).where", message: "a grant through \(entityName) needs at least one condition (else every user holds every root it names)")
                    }
                    grants.append(.through(entity: position, reference: field, try Self.conditions(conditions, of: entity, claims: claims, path: "\(path).where")))
                case .claim(let name):
                    guard claims.contains(name), !ScopeRules.builtInClaims.contains(name) || name == "sub" || name == "tenant" else {
                        throw ScopeRuleError(path: "\(path).claim", message: "unknown claim '\(name)'; declare custom claims in 'claims'")
                    }
                    grants.append(.claim(name))
                case .subscribe(let roles, let conditions):
                    if let roles, roles.isEmpty || roles.contains("") {
                        throw ScopeRuleError(path: "\(path).subscribe.roles", message: "expected role names")
                    }
                    grants.append(.subscribe(
                        roles: roles,
                        try Self.conditions(conditions, of: schema.entities[root], claims: claims, path: "\(path).subscribe.where")))
                }
            }
            var entities = [root]
            // Parents before children: by depth below the root.
            let members = scope.members.keys.map { positions[$0]! }
            func depth(_ position: Int) -> Int {
                var depth = 0, current = position
                while case .member(_, _, let parent) = places[current] { depth += 1; current = parent }
                return depth
            }
            entities += members.sorted { (depth($0), $0) < (depth($1), $1) }
            compiled.append(Scope(name: scope.name, root: root, grants: grants, entities: entities))
        }
        try Self.checkReferences(schema, places, rules.scopes)
        scopes = compiled
        self.places = places
    }

    private static func isNameByte(_ byte: UInt8) -> Bool {
        (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || byte == 0x5F || byte == 0x2D || byte == 0x2E
    }

    private static func claim(_ position: Int, in places: inout [Place], scope: Int, schema: Schema, path: String) throws(ScopeRuleError) {
        guard places[position] == .unscoped else {
            throw ScopeRuleError(path: path, message: "\(schema.entities[position].name) is in another scope already (an entity belongs to one scope at most)")
        }
    }

    private static func conditions(
        _ conditions: [SyncScope.Condition], of entity: Entity, claims: Set<String>, path: String
    ) throws(ScopeRuleError) -> [Condition] {
        var result: [Condition] = []
        for condition in conditions {
            let at = "\(path).\(condition.field)"
            var field: Int?, type: FieldType?
            if condition.field != "id" {
                guard let index = entity.fields.firstIndex(where: { $0.name == condition.field }) else {
                    throw ScopeRuleError(path: at, message: "\(entity.name) has no field '\(condition.field)'")
                }
                field = index
                type = entity.fields[index].type
            }
            switch condition.operand {
            case .claim(let name):
                guard claims.contains(name) else {
                    throw ScopeRuleError(path: at, message: "unknown claim '\(name)'; the built-in claims are sub, tenant and roles, and custom claims must be declared in 'claims'")
                }
            case .value(let value):
                guard Self.fits(value, type) else {
                    throw ScopeRuleError(path: at, message: "\(value) is not a value of \(entity.name).\(condition.field)")
                }
            }
            switch type {
            case nil, .integer?, .text?, .bool?, .reference?: break
            default:
                throw ScopeRuleError(path: at, message: "\(entity.name).\(condition.field) cannot be compared (only integers, references, text and bools)")
            }
            result.append(Condition(field: field, operand: condition.operand, type: type))
        }
        return result
    }

    private static func fits(_ value: Value, _ type: FieldType?) -> Bool {
        switch (value, type) {
        case (.integer, nil), (.integer, .integer?), (.integer, .reference?), (.text, .text?), (.bool, .bool?): true
        default: false
        }
    }

    /// A record a user holds must never reference one it may not hold: a scoped entity's
    /// references go to its parent in the scope or to unscoped entities, and unscoped
    /// entities reference no scoped one.
    private static func checkReferences(_ schema: Schema, _ places: [Place], _ scopes: [SyncScope]) throws(ScopeRuleError) {
        var positions: [String: Int] = [:]
        for (position, entity) in schema.entities.enumerated() { positions[entity.name] = position }
        for (position, entity) in schema.entities.enumerated() {
            for (index, field) in entity.fields.enumerated() {
                guard let target = field.type.referenceTarget, let targetPosition = positions[target],
                    places[targetPosition] != .unscoped
                else { continue }
                if case .member(_, let path, _) = places[position], path == index { continue }
                let scope = scopes[places[targetPosition].scope!].name
                let where_ = places[position].scope.map { "scopes.\(scopes[$0].name)" } ?? "scopes.\(scope)"
                throw ScopeRuleError(
                    path: where_,
                    message: "\(entity.name).\(field.name) references \(target) (scope '\(scope)') but is not the reference that puts "
                        + "\(entity.name) in that scope: a device could hold a \(entity.name) record whose \(target) it may not")
            }
        }
    }
}
