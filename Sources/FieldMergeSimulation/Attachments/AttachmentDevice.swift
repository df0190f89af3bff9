import FieldMerge
import FieldMergeSQLite
import FieldMergeSync

/// One device of an attachment run: its SQLite file (the attachment cache beside it), its
/// download policies and cache limit, and its link to the server. A restart of the app
/// closes the client and opens the file again: the upload queue must survive it.
final class AttachmentDevice {
    static let firstReplica: UInt64 = 0xA000
    let index: Int
    let path: String
    let schema: Schema
    let link: AttachmentLink
    let policies: [String: AttachmentDownloadPolicy]
    let cacheLimit: Int64?
    private(set) var client: SyncClient

    init(
        index: Int, path: String, schema: Schema, link: AttachmentLink, policies: [String: AttachmentDownloadPolicy], cacheLimit: Int64?
    ) async throws {
        (self.index, self.path, self.schema, self.link, self.policies, self.cacheLimit) = (index, path, schema, link, policies, cacheLimit)
        client = try await Self.open(index: index, path: path, schema: schema, link: link, policies: policies, cacheLimit: cacheLimit)
    }

    private static func open(
        index: Int, path: String, schema: Schema, link: AttachmentLink, policies: [String: AttachmentDownloadPolicy], cacheLimit: Int64?
    ) async throws -> SyncClient {
        let store = try Store(.file(path: path), schema: schema, replica: ReplicaID(firstReplica + UInt64(index)))
        try store.setAttachmentCacheLimit(cacheLimit)
        let client = SyncClient(store: store, transport: link)
        for (entity, policy) in policies { await client.setDownloadPolicy(policy, for: entity) }
        return client
    }

    /// The app restarts: the client and its store close, and the file opens again.
    func restart() async throws {
        await client.close()
        client = try await Self.open(index: index, path: path, schema: schema, link: link, policies: policies, cacheLimit: cacheLimit)
    }

    func policy(_ entity: String) -> AttachmentDownloadPolicy { policies[entity] ?? .onAccess }
}

/// A record of an attachment run as a store or the server holds it: the text field and the
/// attachment field (a reference's text, or nil).
struct AttachmentRow: Equatable, Sendable, CustomStringConvertible {
    var entity: String
    var id: Int64
    var text: String?
    var attachment: String?

    var reference: AttachmentReference? { attachment.flatMap { try? AttachmentReference(parsing: $0) } }

    var description: String { "\(entity) \(id) (\(text ?? "nil"), \(attachment ?? "nil"))" }

    /// The rows of `entities` (each: a text field, then an attachment field) in `database`.
    static func read(_ database: Database, entities: [Entity]) throws -> [AttachmentRow] {
        var rows: [AttachmentRow] = []
        for entity in entities {
            let columns = entity.fields.map { Database.quote($0.name) }.joined(separator: ", ")
            for row in try database.rows("SELECT \"id\", \(columns) FROM \(Database.quote(entity.name)) ORDER BY \"id\"") {
                guard row.count == 3, case .integer(let id) = row[0] else { throw SimulationError("a row of \(entity.name) is damaged") }
                rows.append(AttachmentRow(entity: entity.name, id: id, text: row[1].text, attachment: row[2].text))
            }
        }
        return rows
    }
}

extension SQLValue {
    fileprivate var text: String? { if case .text(let text) = self { text } else { nil } }
}
