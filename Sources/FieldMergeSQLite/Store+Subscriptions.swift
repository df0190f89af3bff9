import FieldMerge

/// A root of one of the server's scopes that this device asks for beyond what its user's
/// grants give (Specs/store.md, "Subscriptions"): the sync layer sends it with every request
/// (Specs/scopes.md §6), until the app drops it and its time to live has passed.
public struct StoreSubscription: Sendable, Equatable {
    /// The scope's name on the server.
    public var scope: String
    /// The root record's id (a project).
    public var root: Int64
    /// Whether its records come before those of other roots the device gains.
    public var first: Bool
    /// How long it is still asked for after it is dropped, in milliseconds.
    public var ttl: Int64
    /// When the app dropped it (milliseconds since the epoch); nil while it is wanted.
    public var dropped: Int64?
    /// Whether the server's last answer said the user may not hold this root.
    public var denied: Bool

    public init(scope: String, root: Int64, first: Bool = false, ttl: Int64, dropped: Int64? = nil, denied: Bool = false) {
        self.scope = scope
        self.root = root
        self.first = first
        self.ttl = ttl
        self.dropped = dropped
        self.denied = denied
    }

    /// Whether it is still asked for at `now` (milliseconds since the epoch).
    public func isLive(at now: Int64) -> Bool {
        guard let dropped else { return true }
        return now < dropped &+ ttl
    }
}

extension Store {
    /// The device's subscriptions, by scope and root.
    public func subscriptions() throws(StoreError) -> [StoreSubscription] {
        let rows = try sqlite { () throws(SQLiteError) in
            try database.rows(
                "SELECT \"scope\", \"root\", \"first\", \"ttl\", \"dropped\", \"denied\" FROM \"__fm_subscriptions\" ORDER BY \"scope\", \"root\"")
        }
        return try rows.map { row throws(StoreError) in
            guard row.count == 6, case .text(let scope) = row[0], case .integer(let root) = row[1], case .integer(let first) = row[2],
                case .integer(let ttl) = row[3], case .integer(let denied) = row[5]
            else { throw StoreError(.corrupt, "a subscription is damaged") }
            let dropped: Int64? = if case .integer(let at) = row[4] { at } else { nil }
            return StoreSubscription(scope: scope, root: root, first: first != 0, ttl: ttl, dropped: dropped, denied: denied != 0)
        }
    }

    /// Adds `subscription`, or replaces the one of its scope and root.
    public func saveSubscription(_ subscription: StoreSubscription) throws(StoreError) {
        guard !subscription.scope.isEmpty else { throw StoreError(.invalidArgument, "a subscription needs a scope name") }
        guard subscription.ttl >= 0 else { throw StoreError(.invalidArgument, "a subscription's time to live cannot be negative") }
        try sqlite { () throws(SQLiteError) in
            try database.run(
                "INSERT OR REPLACE INTO \"__fm_subscriptions\" (\"scope\", \"root\", \"first\", \"ttl\", \"dropped\", \"denied\") VALUES (?, ?, ?, ?, ?, ?)",
                [.text(subscription.scope), .integer(subscription.root), .integer(subscription.first ? 1 : 0), .integer(subscription.ttl),
                 subscription.dropped.map { .integer($0) } ?? .null, .integer(subscription.denied ? 1 : 0)])
        }
    }

    /// Forgets the subscriptions of `scope` to `roots`.
    public func removeSubscriptions(_ scope: String, roots: [Int64]) throws(StoreError) {
        try sqlite { () throws(SQLiteError) in
            for root in roots {
                try database.run("DELETE FROM \"__fm_subscriptions\" WHERE \"scope\" = ? AND \"root\" = ?", [.text(scope), .integer(root)])
            }
        }
    }

    /// Records which subscriptions the server's last answer denied (`denied`, by scope):
    /// those listed are marked, every other one unmarked.
    public func markDeniedSubscriptions(_ denied: [String: Set<Int64>]) throws(StoreError) {
        for var subscription in try subscriptions() {
            let isDenied = denied[subscription.scope]?.contains(subscription.root) ?? false
            guard isDenied != subscription.denied else { continue }
            subscription.denied = isDenied
            try saveSubscription(subscription)
        }
    }
}
