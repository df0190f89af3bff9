import FieldMerge

/// What one committed store transaction changed: for a UI to refresh exactly what it shows.
///
/// A local write (insert, update, delete with its cascades), a ``Store/transaction(_:)``
/// block (all its writes together) and an applied sync response each produce one, after
/// they commit; a transaction that rolls back produces none.
public struct StoreChange: Sendable, Equatable {
    public enum Origin: String, Sendable {
        /// A write through the store's API on this replica.
        case local
        /// A server response applied by a sync.
        case sync
    }

    /// A temporary id the server replaced by a permanent one.
    public struct Remap: Sendable, Hashable {
        public var entity: String
        public var temporary: Int64
        public var permanent: Int64
        public init(entity: String, temporary: Int64, permanent: Int64) {
            self.entity = entity
            self.temporary = temporary
            self.permanent = permanent
        }
    }

    public var origin: Origin
    /// Ids of records that appeared, by entity (created here, or by others and received).
    public var inserted: [String: [Int64]] = [:]
    /// Ids of records whose values changed, by entity.
    public var updated: [String: [Int64]] = [:]
    /// Ids of records that are gone, by entity (deleted here, by a cascade, or by others).
    /// Records that left the device's scopes are listed under ``left`` instead.
    public var deleted: [String: [Int64]] = [:]
    /// Ids of records removed because they left what this device may hold (the server's
    /// scopes), by entity, with the local records that referenced them: gone from this
    /// device, not deleted (the server and other devices keep them; Specs/store.md,
    /// "Leaving a scope"). Unsynced changes of them are in ``Store/keptAside()``.
    public var left: [String: [Int64]] = [:]
    /// Temporary ids replaced by permanent ones (typed records holding a temporary id can
    /// take the permanent one: ``Store/currentID(of:)``).
    public var remapped: [Remap] = []
    /// The conflicts the sync's merges decided.
    public var conflicts: [FieldConflict] = []
    /// Every record was thrown away (``Store/resetToEmpty()``): reload everything.
    public var isReset = false

    public init(origin: Origin) { self.origin = origin }

    /// Whether nothing changed.
    public var isEmpty: Bool {
        inserted.isEmpty && updated.isEmpty && deleted.isEmpty && left.isEmpty && remapped.isEmpty && conflicts.isEmpty && !isReset
    }
}

extension Store {
    /// Notes a change in the journal of the transaction in progress.
    func journal(_ note: (inout StoreChange) -> Void) {
        guard onChange != nil || !observers.isEmpty else { return }
        if pendingChange == nil { pendingChange = StoreChange(origin: .local) }
        note(&pendingChange!)
    }
}
