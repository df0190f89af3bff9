import FieldMerge
import FieldMergeServer

/// Which roles may create, update and delete the records of each entity (`serve --policy`),
/// enforced through `RevisionServer/Options/authorize`: a refused change refuses that
/// record alone, answered `unauthorized`, and the rest of the request syncs.
///
/// An entity without a rule of its own follows the default rule; without a default rule
/// nothing it does not name may be written. The role `*` lets anyone. A rule with `read`
/// limits who receives the entity's records (catch-up, answers, conflict truths): the
/// others never see them, and may not write them either; without `read`, everyone reads.
///
/// The document may also carry ``scopes``: which records of scoped entities each user's
/// devices hold (`RevisionServer/Options/scopes`, Specs/scopes.md). They are independent
/// of the write rules: a policy of scopes alone still needs a `default` rule for anyone to
/// write.
public struct AccessPolicy: Sendable, Equatable {
    /// The roles allowed to read and change one entity's records.
    public struct Rule: Sendable, Equatable {
        /// Roles allowed to create, update and delete, unless one of the three says otherwise.
        public var write: Set<String>
        public var create: Set<String>?
        public var update: Set<String>?
        public var delete: Set<String>?
        /// Roles allowed to receive the records; nil: everyone.
        public var read: Set<String>?

        public init(
            write: Set<String>, create: Set<String>? = nil, update: Set<String>? = nil, delete: Set<String>? = nil,
            read: Set<String>? = nil
        ) {
            self.write = write
            self.create = create
            self.update = update
            self.delete = delete
            self.read = read
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
    /// The scope rules of the document's `scopes` and `claims`; nil without `scopes`.
    public var scopes: ScopeRules?

    public init(entities: [String: Rule], defaultRule: Rule? = nil, scopes: ScopeRules? = nil) {
        self.entities = entities
        self.defaultRule = defaultRule
        self.scopes = scopes
    }

    /// Whether `identity` may make a change of `kind` to a record of `entity` (never to one
    /// it may not read).
    public func allows(_ kind: RevisionServer.ChangeKind, of entity: String, by identity: SyncIdentity?) -> Bool {
        guard let rule = entities[entity] ?? defaultRule, mayRead(entity, identity) else { return false }
        return Self.admits(rule.roles(for: kind), identity)
    }

    /// Whether `identity` receives the records of `entity`.
    public func mayRead(_ entity: String, _ identity: SyncIdentity?) -> Bool {
        guard let read = (entities[entity] ?? defaultRule)?.read else { return true }
        return Self.admits(read, identity)
    }

    private static func admits(_ roles: Set<String>, _ identity: SyncIdentity?) -> Bool {
        roles.contains("*") || !roles.isDisjoint(with: identity?.roles ?? [])
    }

    /// The policy as the server's authorization hook.
    public var authorization: RevisionServer.Authorization {
        { [self] request in allows(request.kind, of: request.entity, by: request.identity) }
    }

    /// The policy as the server's read filter (`RevisionServer/Options/readable`); nil
    /// when every entity is readable by everyone.
    public var readFilter: RevisionServer.ReadFilter? {
        guard entities.values.contains(where: { $0.read != nil }) || defaultRule?.read != nil else { return nil }
        return { [self] identity, entity in mayRead(entity, identity) }
    }

    /// A record of an entity one may read must never point at a record one may not: every
    /// role (or `*`) that reads an entity reads the targets of its references. Nil when that
    /// holds, else the first entity and reference that break it.
    public func unreadableParent(in schema: Schema) -> String? {
        func readers(_ entity: String) -> Set<String>? { (entities[entity] ?? defaultRule)?.read }
        for entity in schema.entities {
            for field in entity.fields {
                guard let target = field.type.referenceTarget, let targetReaders = readers(target), !targetReaders.contains("*")
                else { continue }
                let mine = readers(entity.name) ?? ["*"]
                if mine.contains("*") || !mine.isSubset(of: targetReaders) {
                    let who = mine.contains("*") ? "everyone" : "role(s) " + mine.subtracting(targetReaders).sorted().joined(separator: ", ")
                    return "\(entity.name) is readable by \(who), but its reference \(field.name) points at \(target), which they may not read"
                }
            }
        }
        return nil
    }
}
