import FieldMerge
import FieldMergeProtocol

extension RevisionServer {
    /// The catch-up page after each of `revisions` up to the server's latest, as a response
    /// with no answers (nil where more than `limit` records changed), and that latest revision.
    /// One read transaction: one request's turn, or beside the others on a storage that
    /// ``ServerStorage/readsConcurrently``.
    func livePages(after revisions: Set<Int64>, limit: Int) async throws -> (Int64, [Int64: SyncResponse?]) {
        let beside = storage.readsConcurrently
        if !beside { await turnstile.enter() }
        defer { if !beside { turnstile.leave() } }
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
    /// changed after the query's revision (in the roots it is granted now), the roots it is
    /// granted, and, for a query that asks for it, the page that brings such a device from
    /// the query's revision to the latest (nil when more than `limit` records changed): a
    /// response whose `scopes` are the grants, for a device that holds just those. With the
    /// server's latest revision.
    func liveNews(_ queries: [LiveQuery], pages limit: Int) async throws -> (Int64, [LiveNews]) {
        await turnstile.enter()
        defer { turnstile.leave() }
        if !rootsReady { try await prepareRoots() }
        return try await storage.read { () async throws -> (Int64, [LiveNews]) in
            let latest = try await storage.state().maxRevision
            var answers: [LiveNews] = []
            for query in queries {
                let granted = try await grantedRoots(query.identity, subscriptions: query.subscriptions)
                guard query.after < latest else {
                    answers.append(LiveNews(news: false, grants: granted))
                    continue
                }
                // Held as granted: no root gained or lost, so the page is the changes within
                // them (and the records that moved out of them, as `leave`).
                let view = ScopeView(granted: granted, held: granted)
                let page = try await scopedCatchUp(after: query.after, through: latest, limit: query.pages ? limit : 1, view: view)
                var news = LiveNews(news: page.changeSet != nil, grants: granted)
                if query.pages, let changeSet = page.changeSet, !page.hasMore {
                    news.page = SyncResponse(maxRevision: latest, changeSets: [changeSet], scopes: holdings(granted))
                }
                answers.append(news)
            }
            return (latest, answers)
        }
    }
}

/// What a scoped step learnt for one ``LiveQuery``.
struct LiveNews {
    /// Whether anything the identity's devices keep changed after the query's revision.
    var news: Bool
    /// The roots the identity is granted now, by scope.
    var grants: [RootSet]
    /// The changes as a page for a device holding just ``grants`` (asked for, and small enough).
    var page: SyncResponse?
}
