import FieldMerge
import FieldMergeServer
import FieldMergeSQLiteDriver

extension SQLiteServerStorage {
    /// One query: the text between `prefix` and `prefix` with its last character raised by
    /// one, which (SQLite compares text byte by byte) is the text that begins with `prefix`.
    public nonisolated(nonsending) func records(
        _ entity: ServerEntity, field: Int, beginningWith prefix: String, limit: Int
    ) async throws -> [Int64] {
        var upper = Array(prefix.utf8)
        guard let last = upper.popLast(), last < 0x7F else {
            preconditionFailure("the prefix must end with an ASCII character below DEL")
        }
        upper.append(last + 1)
        let sql = table(entity).sql
        let column = sql.fieldColumn(field)
        return try database.rows(
            "SELECT \"id\" FROM \(sql.table) WHERE \(column) >= ? AND \(column) < ? ORDER BY \"id\" LIMIT ?",
            [.text(prefix), .text(String(decoding: upper, as: UTF8.self)), .integer(Int64(limit))]
        ).compactMap { row in
            if case .integer(let id)? = row.first { return id }
            return nil
        }
    }
}
