import FieldMerge
import FieldMergeSQLiteDriver

/// How many local changes have not reached the server, counted without reading them.
public struct UnsyncedCount: Sendable, Equatable {
    /// Records with changes the next sync sends. A record whose edits cancel out (created and
    /// deleted before any sync, or edited back to what the server has) counts until the next
    /// sync finds nothing to send for it.
    public var waiting: Int
    /// Records whose change the server refused, or whose record left what the device may
    /// hold: kept aside until the app retries or discards them (``Store/unsyncedChanges()``).
    public var keptAside: Int

    public init(waiting: Int = 0, keptAside: Int = 0) {
        self.waiting = waiting
        self.keptAside = keptAside
    }

    /// Every change not on the server.
    public var total: Int { waiting + keptAside }
}

extension Store {
    /// How many changes have not reached the server (``UnsyncedCount``): three counts over
    /// the outbox, for a status line or a badge, where ``unsyncedChanges()`` reads and
    /// describes each change. Writes made with plain SQL count at once.
    public func unsyncedCount() throws(StoreError) -> UnsyncedCount {
        if writable { try captureExternalWrites() }
        return try sqlite { () throws(SQLiteError) in
            let waiting = try database.scalar(
                "SELECT count(*) FROM \"__fm_outbox\" o WHERE NOT EXISTS "
                    + "(SELECT 1 FROM \"__fm_parked\" p WHERE p.\"entity\" = o.\"entity\" AND p.\"id\" = o.\"id\")")
            let parked = try database.scalar("SELECT count(*) FROM \"__fm_parked\"")
            let aside = try database.scalar("SELECT count(*) FROM \"__fm_aside\"")
            return UnsyncedCount(waiting: Self.count(waiting), keptAside: Self.count(parked) + Self.count(aside))
        }
    }

    private static func count(_ value: SQLValue?) -> Int {
        if case .integer(let n)? = value { return Int(n) }
        return 0
    }
}
