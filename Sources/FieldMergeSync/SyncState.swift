import FieldMerge
import FieldMergeSQLite

/// Where a client stands, for an app's status line: whether it syncs and how far, what has
/// not reached the server, when it last caught up, and the last failure
/// (``SyncClient/state``, ``SyncClient/states(bufferingPolicy:)``, and `LiveSyncState` for SwiftUI).
public struct SyncState: Sendable, Equatable {
    /// Whether a sync runs or waits to run (``SyncClient/sync(maxRounds:progress:)``, live mode's).
    public var isSyncing = false
    /// The rounds of the running sync so far; nil when none runs or before its first round ends.
    public var progress: SyncProgress?
    /// Local changes not on the server yet (refreshed after each write, sync and pushed change).
    public var unsynced = UnsyncedCount()
    /// When the store last stood where the server stood (a sync that ended without error,
    /// or changes the live channel pushed), in milliseconds since the epoch by the store's
    /// wall clock; nil before the first one since the client started.
    public var lastSynced: UInt64?
    /// Why the last sync failed; nil once one succeeds.
    public var lastError: SyncError?
    /// Whether live mode runs (``SyncClient/startLive(over:options:)``).
    public var isLive = false
    /// Whether live mode's channel is open now (it opens again by itself after a failure).
    public var isConnected = false

    public init() {}

    public static func == (a: SyncState, b: SyncState) -> Bool {
        a.isSyncing == b.isSyncing && a.progress == b.progress && a.unsynced == b.unsynced && a.lastSynced == b.lastSynced
            && a.lastError?.description == b.lastError?.description && a.isLive == b.isLive && a.isConnected == b.isConnected
    }
}
