import FieldMerge
import FieldMergeServer
import FieldMergeSQLiteDriver

extension SQLiteServerStorage {
    /// One query: the text between `prefix` and `prefix` with its last character raised by
    /// one, which (SQLite compares text byte by byte) is the text that begins with `prefix`.
    public nonisolated(nonsending) func record(_ entity: ServerEntity, field: Int, beginningWith prefix: String) async throws -> Int64? {
        var upper = Array(prefix.utf8)
        guard let last = upper.popLast(), last < 0x7F else {
            preconditionFailure("the prefix must end with an ASCII character below DEL")
        }
        upper.append(last + 1)
        let sql = table(entity).sql
        let column = sql.fieldColumn(field)
        let found = try database.scalar(
            "SELECT \"id\" FROM \(sql.table) WHERE \(column) >= ? AND \(column) < ? LIMIT 1",
            [.text(prefix), .text(String(decoding: upper, as: UTF8.self))])
        if case .integer(let id)? = found { return id }
        return nil
    }
}
