import FieldMergeServer
import PostgresNIO

extension PostgresConnector {
    /// Removes a data set: drops the PostgreSQL schema `name` with everything in it (for
    /// benchmarks and tools that made a throwaway one). Irreversible.
    ///
    /// - Throws: `ServerError/Code/badRequest` for a name that is not a
    ///   plain schema name; `ServerError/Code/storage` when it fails.
    public func removeDataSet(named name: String) async throws(ServerError) {
        let quoted: String
        do { quoted = try PostgresIdentifier.quote(name) } catch {
            throw ServerError(.badRequest, "not a data set name: \(error)")
        }
        do {
            _ = try await client.query(PostgresQuery(unsafeSQL: "DROP SCHEMA IF EXISTS \(quoted) CASCADE"), logger: logger)
        } catch {
            throw Self.failure(error, doing: "cannot remove the data set \(name)")
        }
    }
}
