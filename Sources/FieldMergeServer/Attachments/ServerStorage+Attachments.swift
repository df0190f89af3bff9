import FieldMerge

extension ServerStorage {
    /// Reads every alive record of `entity`: right for any storage, slow for a large data set.
    /// `SQLiteServerStorage` answers with one query.
    public nonisolated(nonsending) func records(
        _ entity: ServerEntity, field: Int, beginningWith prefix: String, limit: Int
    ) async throws -> [Int64] {
        let latest = try await state().maxRevision
        var ids: [Int64] = []
        for row in try await changes(entity, after: 0, through: latest).alive {
            if case .text(let text) = row.record.values[field], text.hasPrefix(prefix) { ids.append(row.record.id) }
        }
        return Array(ids.sorted().prefix(limit))
    }
}
