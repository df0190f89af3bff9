import FieldMerge

/// Which records of some entities a user's devices hold (Specs/scopes.md).
///
/// A scope has a **root** entity (`projects`) and **member** entities that hang under it
/// through one reference each (`tasks` by `projectID`, `notes` by `taskID`, which leads on to
/// the task's project): every record of the scope has one root record, and a user holds the
/// records of the roots its **grants** give it. A grant is a membership record (`memberships`
/// whose `userID` is the token's subject, its `projectID` naming the root), a condition on the
/// root's own fields (`ownerID` is the subject), a custom claim listing root ids, or a role
/// that holds every root. Entities in no scope are held by everyone (as the read roles of
/// ``RevisionServer/Options/readable`` allow).
public struct SyncScope: Sendable, Equatable {
    /// Names the scope on the wire and in errors: letters, digits, `_`, `-` and `.`.
    public var name: String
    /// The root entity: each of its records is one root.
    public var root: String
    /// The member entities, each with its reference that leads toward the root (to the root
    /// itself or to another member).
    public var members: [String: String]
    /// Who holds which roots; a user holds the union of what its grants give.
    public var grants: [Grant]

    public init(_ name: String, root: String, members: [String: String] = [:], grants: [Grant]) {
        self.name = name
        self.root = root
        self.members = members
        self.grants = grants
    }

    /// A way to hold roots.
    public enum Grant: Sendable, Equatable {
        /// Users with one of these roles hold every root (and every record of the scope).
        case roles(Set<String>)
        /// The roots whose own fields meet every condition.
        case roots(where: [Condition])
        /// The roots named by `reference` of the records of `entity` that meet every
        /// condition: membership records (`memberships` whose `userID` is the subject).
        case through(entity: String, reference: String, where: [Condition])
        /// The roots whose ids the token's custom claim lists.
        case claim(String)
        /// The roots a device asks for (`SyncRequest/subscriptions`, `client.subscribe`)
        /// whose own fields meet every condition (any root without conditions), for users
        /// with one of `roles` (any user when nil): an archive opened on demand.
        case subscribe(roles: Set<String>? = nil, where: [Condition] = [])
    }

    /// A field (or `id`) equal to a value, or to one of a claim's values.
    public struct Condition: Sendable, Equatable {
        public var field: String
        public var operand: Operand
        public init(_ field: String, _ operand: Operand) {
            self.field = field
            self.operand = operand
        }
    }

    public enum Operand: Sendable, Equatable {
        /// A claim of the token: `sub`, `tenant`, `roles`, or a custom claim the rules declare.
        case claim(String)
        /// A constant: an integer, text or bool of the field's type.
        case value(Value)
    }
}

/// Every scope of a server, and the custom claims their rules may name.
public struct ScopeRules: Sendable, Equatable {
    public var scopes: [SyncScope]
    /// Custom claims of the token the rules may name besides `sub`, `tenant` and `roles`
    /// (``SyncIdentity/claims``).
    public var claims: Set<String>

    public init(_ scopes: [SyncScope], claims: Set<String> = []) {
        self.scopes = scopes
        self.claims = claims
    }

    /// The claims every token has.
    public static let builtInClaims: Set<String> = ["sub", "tenant", "roles"]
}

/// A rule that does not fit the schema, with where it is (`scopes.project.members.tasks`).
public struct ScopeRuleError: Error, Sendable, Equatable, CustomStringConvertible {
    /// Where in the rules: scope, key and position, as the policy file's JSON path would say
    /// it without its leading `$.`.
    public var path: String
    public var message: String
    public init(path: String, message: String) {
        self.path = path
        self.message = message
    }
    public var description: String { "\(path): \(message)" }
}
