import FieldMergeServer

/// Which roles may create, update and delete the records of each entity (`serve --policy`),
/// enforced through ``RevisionServer/Options/authorize``: a refused change refuses that
/// record alone, answered `unauthorized`, and the rest of the request syncs.
///
/// An entity without a rule of its own follows the default rule; without a default rule
/// nothing it does not name may be written. The role `*` lets anyone. Reading is not
/// restricted: catch-up sends every entity to everyone.
public struct AccessPolicy: Sendable, Equatable {
    /// The roles allowed to change one entity's records.
    public struct Rule: Sendable, Equatable {
        /// Roles allowed to create, update and delete, unless one of the three says otherwise.
        public var write: Set<String>
        public var create: Set<String>?
        public var update: Set<String>?
        public var delete: Set<String>?

        public init(write: Set<String>, create: Set<String>? = nil, update: Set<String>? = nil, delete: Set<String>? = nil) {
            self.write = write
            self.create = create
            self.update = update
            self.delete = delete
        }

        /// The roles allowed to make a change of `kind`.
        public func roles(for kind: RevisionServer.ChangeKind) -> Set<String> {
            switch kind {
            case .create: create ?? write
            case .update: update ?? write
            case .delete: delete ?? write
            }
        }
    }

    public var entities: [String: Rule]
    public var defaultRule: Rule?

    public init(entities: [String: Rule], defaultRule: Rule? = nil) {
        self.entities = entities
        self.defaultRule = defaultRule
    }

    /// Whether `identity` may make a change of `kind` to a record of `entity`.
    public func allows(_ kind: RevisionServer.ChangeKind, of entity: String, by identity: SyncIdentity?) -> Bool {
        guard let rule = entities[entity] ?? defaultRule else { return false }
        let allowed = rule.roles(for: kind)
        return allowed.contains("*") || !allowed.isDisjoint(with: identity?.roles ?? [])
    }

    /// The policy as the server's authorization hook.
    public var authorization: RevisionServer.Authorization {
        { [self] request in allows(request.kind, of: request.entity, by: request.identity) }
    }
}
