import FieldMerge
import FieldMergeServer
import PostgresNIO

extension PostgresServerStorage {
    /// One query: the records whose field begins with `prefix` (`starts_with`, which compares
    /// bytes whatever the database's collation), instead of the protocol's scan of every
    /// record in Swift.
    public nonisolated(nonsending) func records(
        _ entity: ServerEntity, field: Int, beginningWith prefix: String, limit: Int
    ) async throws -> [Int64] {
        let table = table(entity)
        let column = table.sql.fieldColumn(field)
        return try await run(
            "SELECT \"id\" FROM \(table.table) WHERE starts_with(\(column), $1) ORDER BY \"id\" LIMIT $2",
            Self.binds(prefix, Int64(limit))
        ).map { row throws(ServerError) in try Self.decode(row.makeRandomAccess()[0], as: Int64.self) }
    }
}
