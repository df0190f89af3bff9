import FieldMerge
import FieldMergeProtocol

/// Scopes on the server (Specs/scopes.md): each record of a scoped entity carries its root;
/// a user's grants give it roots; catch-up sends what changed under the roots a device
/// holds, every record of the roots it gains (backfill), and `leave` for what it loses.
extension RevisionServer {
    /// What one request's device holds and may hold, by scope.
    struct ScopeView {
        var granted: [RootSet]
        var held: [RootSet]
        /// By scope, the roots the device wants backfilled first (`SyncRequest/priority`).
        var priority: [Set<Int64>] = []
        /// The subscribed roots no grant gives (`SyncResponse/deniedSubscriptions`).
        var denied: ScopeHoldings? = nil
    }

    /// The most roots a request may subscribe to, over all scopes.
    static var maxSubscribedRoots: Int { 1_000 }

    /// The storage as a scoped one (the server checks this when it starts).
    var scopedStorage: any ScopedServerStorage { storage as! any ScopedServerStorage }

    /// The rules resolved for `schema`, or nil without rules.
    static func scopePlan(_ rules: ScopeRules?, schema: Schema, storage: any ServerStorage) throws(ServerError) -> ScopePlan? {
        guard let rules else { return nil }
        guard storage is any ScopedServerStorage else {
            throw ServerError(.storage, "this storage (\(type(of: storage))) cannot serve scopes")
        }
        do {
            return try ScopePlan(rules, schema: schema)
        } catch {
            throw ServerError(.badRequest, "the scope rules do not fit the schema: \(error)")
        }
    }

    /// Gives every record its root, once per storage and set of rules (the first request
    /// after the rules change pays for it, in one write transaction).
    func prepareRoots() async throws {
        guard let plan = scopePlan, !rootsReady else { return }
        let storage = scopedStorage
        // Read first: a write here runs alone where writes run in parallel, and a server that
        // starts on rules the data set already has must not hold the others' writes back. (A
        // data set that lacks what the signature needs fails the read: the write makes it.)
        if let signature = try? await storage.read({ try await storage.scopeSignature() }), signature == plan.signature {
            rootsReady = true
            return
        }
        try await storage.write { () async throws in
            guard try await storage.scopeSignature() != plan.signature else { return }
            for (position, place) in plan.places.enumerated() where place == .unscoped {
                try await storage.assignRoots(entities[position], parent: nil, clear: true)
            }
            for scope in plan.scopes {
                for position in scope.entities {
                    if case .member(_, let field, let parent) = plan.places[position] {
                        try await storage.assignRoots(entities[position], parent: (entities[parent], field), clear: false)
                    } else {
                        try await storage.assignRoots(entities[position], parent: nil, clear: false)
                    }
                }
            }
            try await storage.saveScopeSignature(plan.signature)
        }
        rootsReady = true
    }

    /// The roots `identity` holds now, by scope (inside the request's transaction), with the
    /// roots its device subscribes to that a `subscribe` grant allows.
    func grantedRoots(_ identity: SyncIdentity?, subscriptions: ScopeHoldings? = nil) async throws -> [RootSet] {
        guard let plan = scopePlan else { return [] }
        var result: [RootSet] = []
        for scope in plan.scopes {
            var roots: Set<Int64> = []
            var all = false
            for grant in scope.grants where !all {
                switch grant {
                case .roles(let roles):
                    all = !roles.isDisjoint(with: identity?.roles ?? [])
                case .roots(let conditions):
                    let matches = Self.bindings(conditions, identity)
                    if let matches { roots.formUnion(try await scopedStorage.select(nil, of: entities[scope.root], where: matches)) }
                case .through(let entity, let reference, let conditions):
                    let matches = Self.bindings(conditions, identity)
                    if let matches { roots.formUnion(try await scopedStorage.select(reference, of: entities[entity], where: matches)) }
                case .claim(let name):
                    roots.formUnion((identity?.values(ofClaim: name) ?? []).compactMap { Int64($0) })
                case .subscribe(let roles, let conditions):
                    guard case .some(let asked)? = subscriptions?[scope.name], !asked.isEmpty else { continue }
                    if let roles, roles.isDisjoint(with: identity?.roles ?? []) { continue }
                    guard let matches = Self.bindings(conditions, identity) else { continue }
                    // Only roots that exist and meet the conditions: never a root by its id alone.
                    roots.formUnion(try await scopedStorage.select(
                        nil, of: entities[scope.root], where: [(nil, asked.map(Value.integer))] + matches))
                }
            }
            result.append(all ? .all : .ids(roots))
        }
        return result
    }

    /// The conditions with their values; nil when one has none (it matches nothing).
    private static func bindings(_ conditions: [ScopePlan.Condition], _ identity: SyncIdentity?) -> [(field: Int?, values: [Value])]? {
        var result: [(field: Int?, values: [Value])] = []
        for condition in conditions {
            let values: [Value]
            switch condition.operand {
            case .value(let value): values = [value]
            case .claim(let name):
                values = (identity?.values(ofClaim: name) ?? []).compactMap { text in
                    switch condition.type {
                    case nil, .integer?, .reference?: Int64(text).map(Value.integer)
                    case .bool?: text == "true" ? .bool(true) : text == "false" ? .bool(false) : nil
                    default: .text(text)
                    }
                }
            }
            guard !values.isEmpty else { return nil }
            result.append((condition.field, values))
        }
        return result
    }

    /// What the request's device holds: as it says, else everything when it synced before
    /// (it may hold any record) and nothing when it never did.
    func heldRoots(_ request: SyncRequest) -> [RootSet] {
        guard let plan = scopePlan else { return [] }
        return plan.scopes.map { scope in
            request.scopes?[scope.name] ?? (request.maxRevision > 0 ? .all : .none)
        }
    }

    func holdings(_ roots: [RootSet]) -> ScopeHoldings? {
        guard let plan = scopePlan else { return nil }
        var holdings = ScopeHoldings()
        for (scope, set) in zip(plan.scopes, roots) { holdings[scope.name] = set }
        return holdings
    }

    /// Whether the request's user holds `root` of the scope of entity `position`: by the
    /// grants read at the start of the request or, failing that, as they stand now (the
    /// request may have granted it: a project and its membership created together).
    func holds(_ root: Int64?, scope: Int, identity: SyncIdentity?) async throws -> Bool {
        if requestGrants.indices.contains(scope), requestGrants[scope].contains(root) { return true }
        requestGrants = try await grantedRoots(identity, subscriptions: requestSubscriptions)
        return requestGrants[scope].contains(root)
    }

    /// The root of a record of `entity` with `values`: its own id for the root entity, its
    /// parent's root for a member (nil with a null reference); `resolved` is false when the
    /// parent is not written yet (created later in the same change set).
    func root(of entity: ServerEntity, id: Int64, values: ContiguousArray<Value>) async throws -> (root: Int64?, resolved: Bool) {
        guard let plan = scopePlan else { return (nil, true) }
        switch plan.places[entity.position] {
        case .unscoped: return (nil, true)
        case .root: return (id, true)
        case .member(_, let field, let parent):
            guard case .integer(let parentID) = values[field] else { return (nil, true) }
            guard let parentRow = try await storage.rowsToReference(entities[parent], ids: [parentID])[parentID] else { return (nil, false) }
            return (parentRow.root, true)
        }
    }

    /// Moves the records under a record whose root changed from `old` to `new`, member
    /// entity by member entity: each gets the new root and this change set's revision (so
    /// that the devices of the new root receive it), and a departure from the old root.
    ///
    /// The client's own update or delete of a moved record, later in the same change set,
    /// names the revision it had before (as after a `setNull` cascade).
    func reroot(_ entity: ServerEntity, id: Int64, from old: Int64?, to new: Int64?, _ attempt: inout ChangeSetAttempt) async throws {
        guard let plan = scopePlan else { return }
        let revision = attempt.revision
        for (position, place) in plan.places.enumerated() {
            guard case .member(_, let field, let parent) = place, parent == entity.position else { continue }
            let child = entities[position]
            for childID in try await storage.referencing(id, from: child, field: field) {
                // Locked as a record the change set changes: a write beside this one that
                // changes it waits, or is waited for and read as it left it.
                guard var row = try await storage.rowsToChange(child, ids: [childID])[childID], row.root != new else { continue }
                let key = "\(child.name)#\(childID)"
                if attempt.revisionBefore[key] == nil { attempt.revisionBefore[key] = row.revision }
                row.root = new
                row.advance(to: revision, changed: FieldMask())
                try await storage.write(row, of: child)
                if let old { try await scopedStorage.depart(child, id: childID, from: old, revision: revision) }
                try await reroot(child, id: childID, from: old, to: new, &attempt)
            }
        }
    }
}

extension ScopePlan {
    /// Names the plan's roots and members: roots are assigned again when it changes.
    var signature: String {
        scopes.map { scope in
            scope.name + ":" + scope.entities.map { position -> String in
                if case .member(_, let field, let parent) = places[position] { return "\(position).\(field)>\(parent)" }
                return "\(position)"
            }.joined(separator: ",")
        }.joined(separator: ";")
    }
}

extension RevisionServer {
    /// What the request's device holds and may hold; nil without scopes. Also what write
    /// checks start from (``requestGrants``).
    func scopeView(_ request: SyncRequest, identity: SyncIdentity?) async throws -> ScopeView? {
        guard let plan = scopePlan else { return nil }
        try Self.checkSubscriptions(request, plan: plan)
        let granted = try await grantedRoots(identity, subscriptions: request.subscriptions)
        if !request.changeSets.isEmpty {  // a read may run beside a write, whose grants these are
            requestGrants = granted
            requestSubscriptions = request.subscriptions
        }
        var view = ScopeView(granted: granted, held: heldRoots(request))
        view.priority = plan.scopes.map { scope in
            guard case .some(let ids)? = request.priority?[scope.name] else { return [] }
            return Set(ids)
        }
        var denied = ScopeHoldings()
        for (scope, set) in zip(plan.scopes, granted) {
            guard case .some(let asked)? = request.subscriptions?[scope.name] else { continue }
            let refused = asked.filter { !set.contains($0) }
            if !refused.isEmpty { denied[scope.name] = .some(refused) }
        }
        view.denied = denied.isEmpty ? nil : denied
        return view
    }

    /// What the device holds once it has applied `page`: what its user is granted, but the
    /// gained roots the page left for later.
    static func held(after page: Page, view: ScopeView) -> [RootSet] {
        guard !page.deferred.isEmpty else { return view.granted }
        return zip(view.granted, page.deferred).map { granted, deferred in
            guard !deferred.isEmpty, case .some(let ids) = granted else { return granted }
            return .some(ids.filter { !deferred.contains($0) })
        }
    }

    /// Subscriptions and priorities name scopes the server has, and at most
    /// ``maxSubscribedRoots`` roots in all.
    private static func checkSubscriptions(_ request: SyncRequest, plan: ScopePlan) throws(ServerError) {
        for (key, holdings) in [("subscriptions", request.subscriptions), ("priority", request.priority)] {
            guard let holdings else { continue }
            var count = 0
            for (name, set) in holdings.scopes {
                guard plan.scopes.contains(where: { $0.name == name }) else {
                    throw ServerError(.badRequest, "\(key) names scope '\(name)', which this server does not have")
                }
                if case .some(let ids) = set { count += ids.count }
            }
            guard count <= maxSubscribedRoots else {
                throw ServerError(.badRequest, "\(key) names \(count) roots; at most \(maxSubscribedRoots)")
            }
        }
    }
}
