import FieldMerge
import FieldMergeProtocol
import FieldMergeServer
import Foundation

/// `serve --seed-records N`: fills an empty data set with N made-up records of one entity
/// before serving, so that a download of a large data set can be measured
/// (`fieldmerge sync` against it). Records go in as a device's creates would, through the
/// server's own request path: change sets of 1,000 records (one revision each), ten per
/// request, generated as they go, so seeding holds one request at a time.
struct ServeSeed {
    var records: Int
    var entity: Entity

    /// The values of record `n` (0-based): every type filled, references, blobs and
    /// attachments (whose bytes the seed does not make) null.
    func values(_ n: Int) -> ContiguousArray<Value> {
        ContiguousArray(entity.fields.map { field -> Value in
            switch field.type {
            case .text: return .text("\(entity.name) \(n) \(field.name)")
            case .integer: return .integer(Int64(n % 1_000))
            case .real: return .real(Double(n) / 8)
            case .bool: return .bool(n % 2 == 0)
            case .date: return .date(1_700_000_000_000 + Int64(n) * 1_000)
            case .textSet: return .textSet(TextSet(["tag\(n % 10)"]))
            case .blob, .reference, .attachment: return .null
            }
        })
    }

    /// Seeds `server` if its data set is empty; returns the records created (0 when it
    /// already held data, which is left as it is).
    func seed(_ server: RevisionServer) async throws -> Int {
        guard await server.maxRevision == 0 else { return 0 }
        let stamp = Stamp(milliseconds: UInt64(Date().timeIntervalSince1970 * 1_000), replica: ReplicaID(0x5EED))
        let perChangeSet = 1_000, perRequest = 10_000
        var next = 0
        while next < records {
            let end = min(next + perRequest, records)
            let changeSets = stride(from: next, to: end, by: perChangeSet).map { start in
                let ids = (start..<min(start + perChangeSet, end)).map { -Int64($0) - 1 }
                let wire = ids.map { id in WireRecord(Record(entity, id: id, values: values(Int(-id - 1)), stamp: stamp)) }
                return ChangeSet(entities: [EntityChanges(entity: entity.name, create: ids, records: wire)])
            }
            let response = try await server.handle(SyncRequest(maxRevision: await server.maxRevision, changeSets: changeSets))
            if let refused = response.changeSets.first(where: { $0.conflict == true }) {
                throw SeedFailed(message: "the server refused seed records: \(refused.refused.first.map { "\($0.code): \($0.message)" } ?? "conflict")")
            }
            next = end
        }
        return records
    }
}

struct SeedFailed: Error, CustomStringConvertible {
    var message: String
    var description: String { message }
}
