import FieldMerge

/// The calls that name a record by entity name and id, for a ``StoredRecord`` type instead.
extension Store {
    /// Sends a refused change of a record of `type` again with the next sync
    /// (`retry(_:id:)` by entity name); a temporary id the server replaced finds the record
    /// under its permanent one.
    ///
    /// - Parameters:
    ///   - type: The record's type: its table names the entity.
    ///   - id: The record's id.
    /// - Throws: ``StoreError/Code/recordNotFound`` when no change of that record was refused.
    public func retry<R: StoredRecord>(_ type: R.Type, id: Int64) throws(StoreError) {
        try retry(R.table.entity.name, id: try currentID(R.table.entity.name, id))
    }

    /// Gives up a refused (or kept aside) change of a record of `type`
    /// (`discard(_:id:)` by entity name).
    ///
    /// - Parameters:
    ///   - type: The record's type: its table names the entity.
    ///   - id: The record's id.
    /// - Throws: ``StoreError/Code/recordNotFound`` when no change of that record was refused
    ///   or kept aside.
    public func discard<R: StoredRecord>(_ type: R.Type, id: Int64) throws(StoreError) {
        try discard(R.table.entity.name, id: try currentID(R.table.entity.name, id))
    }

    /// The conflicts syncs decided on records of `type` (of the record `id` only, when
    /// given), newest first, from the kept history (``conflictHistory(limit:)``).
    ///
    /// - Parameters:
    ///   - type: The records' type: its table names the entity.
    ///   - id: One record's id, or nil for every record of the type.
    ///   - limit: At most this many.
    public func conflictHistory<R: StoredRecord>(of type: R.Type, id: Int64? = nil, limit: Int = 100) throws(StoreError) -> [ConflictRecord] {
        let entity = R.table.entity.name
        let record = try id.map { (id) throws(StoreError) in try currentID(entity, id) }
        let all = try conflictHistory(limit: Self.conflictHistoryLimit)
        return Array(all.lazy.filter { $0.conflict.entity == entity && (record == nil || $0.conflict.id == record) }.prefix(max(0, limit)))
    }
}
