import FieldMerge

extension Store {
    /// Records by entity name and field position, for code whose schema is only known at run
    /// time (a schema file: the command line, an importer, a generic admin tool).
    ///
    /// An app's front door is its ``StoredRecord`` types: `insert(&record)`, ``save(_:)``,
    /// `delete(record)`, ``fetch(_:id:)`` and queries. These calls do the same work by name
    /// and position, with the same checks (the entity and field must exist, each value must
    /// fit its field's type) and the same journal, so observers and the outbox see them alike.
    ///
    /// ```swift
    /// let id = try store.untyped.insert("tasks", values: [.text("Write spec"), .bool(false)])
    /// try store.untyped.update("tasks", id: id, ["done": .bool(true)])
    /// ```
    public var untyped: UntypedRecords { UntypedRecords(store: self) }
}

/// Reads and local edits of a ``Store`` by entity name and field position
/// (``Store/untyped``): what a tool without Swift types for the schema uses.
public struct UntypedRecords {
    let store: Store

    /// Creates a record with a new temporary id (-1, -2, ...) and queues it for upload.
    ///
    /// One transaction writes the row (every field stamped with one fresh stamp), its
    /// metadata, the outbox entry, the id counter and the clock.
    /// - Parameters:
    ///   - entity: The entity's name.
    ///   - values: One value per field, in the entity's field order.
    /// - Returns: The temporary id; the server gives the permanent one at the next sync.
    @discardableResult
    public func insert(_ entity: String, values: ContiguousArray<Value>) throws(StoreError) -> Int64 {
        try store.insert(entity, values: values)
    }

    /// Creates a record under a given id: a permanent id the app owns, or the id of a record
    /// deleted earlier, which comes back to life (its deletion is no longer sent).
    public func insert(_ entity: String, id: Int64, values: ContiguousArray<Value>) throws(StoreError) {
        try store.insert(entity, id: id, values: values)
    }

    /// Sets fields by position. Only fields whose value really changes are stamped (all with
    /// one fresh stamp) and queued.
    /// - Returns: The fields that changed; empty when nothing did (and nothing was written).
    @discardableResult
    public func update(_ entity: String, id: Int64, set changes: [(field: Int, value: Value)]) throws(StoreError) -> FieldMask {
        try store.update(entity, id: id, set: changes)
    }

    /// Sets fields by name.
    /// - Returns: The fields that changed.
    @discardableResult
    public func update(_ entity: String, id: Int64, _ changes: [String: Value]) throws(StoreError) -> FieldMask {
        try store.update(entity, id: id, changes)
    }

    /// Deletes a record, following the schema's references: records that reference it are
    /// deleted too (`cascade`), get null (`setNull`), or make the delete fail (`restrict`).
    public func delete(_ entity: String, id: Int64) throws(StoreError) {
        try store.delete(entity, id: id)
    }

    /// The record with this id: alive, deleted (a tombstone the server has not confirmed
    /// yet; values are null), or nil when the store has no trace of it.
    public func record(_ entity: String, id: Int64) throws(StoreError) -> Record? {
        try store.record(entity, id: id)
    }
}
