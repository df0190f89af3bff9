import FieldMerge
import FieldMergeProtocol

extension RevisionServer {
    /// The catch-up page after each of `revisions` up to the server's latest, as a response
    /// with no answers (nil where more than `limit` records changed), and that latest revision.
    /// One read transaction, one request's turn.
    func livePages(after revisions: Set<Int64>, limit: Int) async throws -> (Int64, [Int64: SyncResponse?]) {
        await turnstile.enter()
        defer { turnstile.leave() }
        return try await storage.read { () async throws -> (Int64, [Int64: SyncResponse?]) in
            let latest = try await storage.state().maxRevision
            var pages: [Int64: SyncResponse?] = [:]
            for revision in revisions where revision < latest {
                let page = try await catchUp(after: revision, through: latest, limit: limit)
                pages[revision] = page.hasMore
                    ? SyncResponse?.none
                    : SyncResponse(maxRevision: latest, changeSets: page.changeSet.map { [$0] } ?? [])
            }
            for revision in revisions where revision >= latest {
                pages[revision] = SyncResponse(maxRevision: revision, changeSets: [])
            }
            return (latest, pages)
        }
    }

    /// For each query of a server with scopes: whether a record the identity's devices keep
    /// changed after the query's revision (in the roots it is granted now), and the roots it
    /// is granted; with the server's latest revision.
    func liveNews(_ queries: [LiveQuery]) async throws -> (Int64, [(news: Bool, grants: [RootSet])]) {
        await turnstile.enter()
        defer { turnstile.leave() }
        if !rootsReady { try await prepareRoots() }
        return try await storage.read { () async throws -> (Int64, [(news: Bool, grants: [RootSet])]) in
            let latest = try await storage.state().maxRevision
            var answers: [(news: Bool, grants: [RootSet])] = []
            for query in queries {
                let granted = try await grantedRoots(query.identity, subscriptions: query.subscriptions)
                guard query.after < latest else {
                    answers.append((false, granted))
                    continue
                }
                let page = try await scopedCatchUp(
                    after: query.after, through: latest, limit: 1, view: ScopeView(granted: granted, held: granted))
                answers.append((page.changeSet != nil, granted))
            }
            return (latest, answers)
        }
    }
}
