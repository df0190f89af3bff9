import FieldMerge
import FieldMergeProtocol
import FieldMergeSQLite

/// A root of one of the server's scopes that the device asks for beyond its user's grants
/// (Specs/scopes.md §6): an archived project the user opens, a record shared by link.
public struct Subscription: Sendable, Equatable {
    public enum State: Sendable, Equatable {
        /// Asked for; the device does not hold its records yet.
        case pending
        /// The device holds its records (by this subscription or by any grant).
        case synced
        /// The server said the user may not hold it (no grant allows it, or no such root).
        case denied
    }

    public var scope: String
    public var root: Int64
    public var state: State
    /// Whether its records come before those of other roots the device gains.
    public var first: Bool
    /// When it stops being asked for, once dropped (milliseconds since the epoch); nil while
    /// it is wanted.
    public var expires: Int64?
}

extension SyncClient {
    /// How long a dropped subscription's records stay on the device by default: a day.
    public static let defaultSubscriptionTTL: Duration = .seconds(86_400)

    /// Asks the server for the records of root `id` of `scope` from the next sync on, beyond
    /// what the user's grants give; kept in the store (it survives restarts). The server
    /// gives it when one of the scope's `subscribe` grants allows it, else says it is
    /// ``Subscription/State/denied``. Subscribing again to a dropped one takes it back.
    ///
    /// - Parameters:
    ///   - scope: The scope's name on the server (`project`).
    ///   - id: The root record's id.
    ///   - first: Its records come before those of the other roots the device gains (the
    ///     project the user has open): backfill comes in pages of whole roots.
    ///   - ttl: How long its records stay after ``unsubscribe(_:id:)`` (for a user who comes
    ///     back to it soon); they leave with the first sync after that, unless a grant or
    ///     another subscription still gives them.
    /// - Throws: `StoreError` when the store cannot record it.
    public func subscribe(_ scope: String, id: Int64, first: Bool = false, ttl: Duration = defaultSubscriptionTTL) throws(StoreError) {
        releaseCatchUp()
        try store.saveSubscription(StoreSubscription(scope: scope, root: id, first: first, ttl: Self.milliseconds(ttl)))
        live?.resubscribe()
    }

    /// Drops the subscription to root `id` of `scope`: its records stay for its time to live,
    /// then leave with the next sync (unless a grant still gives them). Nothing happens when
    /// there is no such subscription.
    public func unsubscribe(_ scope: String, id: Int64) throws(StoreError) {
        releaseCatchUp()
        guard var subscription = try store.subscriptions().first(where: { $0.scope == scope && $0.root == id }),
            subscription.dropped == nil
        else { return }
        subscription.dropped = Int64(clamping: store.wall.milliseconds())
        try store.saveSubscription(subscription)
        if subscription.ttl == 0 { live?.resubscribe() }
    }

    /// The device's subscriptions, dropped ones included until their time to live passes,
    /// by scope and root.
    public func subscriptions() throws -> [Subscription] {
        releaseCatchUp()
        let held = try holdings()
        return try store.subscriptions().map { stored in
            let state: Subscription.State =
                stored.denied ? .denied : (held?[stored.scope]?.contains(stored.root) ?? false) ? .synced : .pending
            return Subscription(
                scope: stored.scope, root: stored.root, state: state, first: stored.first,
                expires: stored.dropped.map { $0 &+ stored.ttl })
        }
    }

    /// Syncs until the subscription to root `id` of `scope` is synced or denied (its first
    /// sync): at most `attempts` syncs.
    ///
    /// - Returns: Its state after the last sync (``Subscription/State/pending`` only when the
    ///   attempts ran out, or the server has no scopes).
    /// - Throws: ``SyncError`` when a sync fails; `StoreError` when there is no such
    ///   subscription.
    public func firstSync(of scope: String, id: Int64, attempts: Int = 10) async throws -> Subscription.State {
        for _ in 0..<max(1, attempts) {
            guard let subscription = try subscriptions().first(where: { $0.scope == scope && $0.root == id }) else {
                throw StoreError(.invalidArgument, "no subscription to \(scope) \(id)")
            }
            if subscription.state != .pending { return subscription.state }
            _ = try await sync()
        }
        return try subscriptions().first(where: { $0.scope == scope && $0.root == id })?.state ?? .pending
    }

    /// What a request asks for: the roots subscribed to and those wanted first, by scope
    /// (nil when none); subscriptions whose time to live has passed are forgotten here.
    func subscriptionRequest() throws(StoreError) -> (subscriptions: ScopeHoldings?, priority: ScopeHoldings?) {
        let now = Int64(clamping: store.wall.milliseconds())
        var asked: [String: [Int64]] = [:], first: [String: [Int64]] = [:], expired: [String: [Int64]] = [:]
        for subscription in try store.subscriptions() {
            guard subscription.isLive(at: now) else {
                expired[subscription.scope, default: []].append(subscription.root)
                continue
            }
            asked[subscription.scope, default: []].append(subscription.root)
            if subscription.first { first[subscription.scope, default: []].append(subscription.root) }
        }
        for (scope, roots) in expired { try store.removeSubscriptions(scope, roots: roots) }
        func holdings(_ roots: [String: [Int64]]) -> ScopeHoldings? {
            roots.isEmpty ? nil : ScopeHoldings(roots.mapValues { RootSet.ids($0) })
        }
        return (holdings(asked), holdings(first))
    }

    /// Notes which subscriptions `response` denied (every response of a server with scopes
    /// says, by leaving the key out when none).
    func noteDenials(_ response: SyncResponse, asked: ScopeHoldings?) throws(StoreError) {
        guard asked != nil || response.deniedSubscriptions != nil, response.scopes != nil else { return }
        var denied: [String: Set<Int64>] = [:]
        for (scope, roots) in response.deniedSubscriptions?.scopes ?? [:] {
            if case .some(let ids) = roots { denied[scope] = Set(ids) }
        }
        try store.markDeniedSubscriptions(denied)
    }

    static func milliseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return max(0, seconds &* 1000 &+ attoseconds / 1_000_000_000_000_000)
    }
}
