import FieldMerge
import FieldMergeProtocol
import FieldMergeSQLite

/// The request in flight (Specs/store.md, "A request in flight"): sent again, byte for byte,
/// until an answer to it is applied.
extension SyncClient {
    /// Sends the bytes of the request in flight. A request the server read and refused as a
    /// whole changed nothing there, so it is forgotten: the next one is made from the store
    /// again. A refusal that says nothing of the request, because the server did not read
    /// it (no valid token, no data set) or read bytes the client never sent (damaged on the
    /// way), keeps it in flight: an earlier attempt whose answer was lost may have been
    /// taken, and only these bytes, under their request id, get its answer replayed.
    func sendInFlight(_ wire: [UInt8]) async throws -> Exchange {
        do {
            return try await Self.exchange(wire: wire, codec: codec, transport: transport, gzip: gzip, probe: probe)
        } catch let refusal as SyncRequestRejected {
            switch InFlightRefusal(refusal) {
            case .damagedOnTheWay:
                throw TransportError(
                    "the server could not read the request (\(refusal)), which the client encoded and still reads whole: "
                        + "it was damaged on the way; kept in flight and sent again by the next sync")
            case .notRead, .idTaken:
                throw refusal
            case .refused:
                try store.clearInFlight()
                throw refusal
            }
        }
    }

    /// When the last request with change sets was never answered (a lost answer, a crash, a
    /// closed app), sends it again as it was and applies its answer: the server replays what
    /// it answered, or takes it now. The changes it carried are rebuilt from its body and
    /// the store (whose acknowledged versions have not moved since it was sent); what was
    /// edited since stays pending for the rounds after.
    ///
    /// A request written with another schema (the app was upgraded in between) cannot be
    /// read back: it is forgotten and its changes are sent anew.
    func resendInFlight(summary: inout SyncSummary, refused: inout Set<String>) async throws {
        guard let inFlight = try store.inFlightRequest() else { return }
        guard inFlight.fingerprint == schemaFingerprint else { return try store.clearInFlight() }
        let json = inFlight.gzip ? try Gzip.decompress(inFlight.body, limit: WireLimits().maxDecompressedBytes) : inFlight.body
        let pending: [PendingChange]
        do {
            pending = try Self.sentChanges(in: try codec.decodeRequest(json).changeSets, store: store)
        } catch {
            return try store.clearInFlight()  // unreadable: send anew from the store
        }
        guard !pending.isEmpty else { return try store.clearInFlight() }
        let exchange = try await sendInFlight(inFlight.body)
        var ahead: Prefetch?
        _ = try absorb(exchange, pending: pending, summary: &summary, refused: &refused, ahead: &ahead)
        ahead?.cancel()
    }

    /// The changes a request carried, as the store had them when it was sent: creates and
    /// re-creates whole, updates as their acknowledged version with the sent fields over it,
    /// deletes with their tombstone.
    static func sentChanges(in changeSets: [ChangeSet], store: Store) throws -> [PendingChange] {
        var changes: [PendingChange] = []
        for changeSet in changeSets {
            for entityChanges in changeSet.entities {
                let entity = try store.schema.requireEntity(entityChanges.entity)
                var records: [Int64: WireRecord] = [:]
                for record in entityChanges.records { records[record.id] = record }
                func whole(_ wire: WireRecord) -> Record {
                    Record(entity: entity.name, id: wire.id, values: wire.values,
                           stamps: wire.stamps ?? ContiguousArray(repeating: .none, count: entity.fields.count))
                }
                for (ids, kind) in [(entityChanges.create, PendingChange.Kind.create), (entityChanges.recreate, .recreate)] {
                    for id in ids {
                        guard let wire = records[id] else { continue }
                        changes.append(PendingChange(
                            entity: entity.name, id: id, kind: kind, fields: entity.allFields, record: whole(wire), revision: wire.revision))
                    }
                }
                for id in entityChanges.update {
                    guard let wire = records[id] else { continue }
                    var record = try store.ancestor(entity.name, id: id)?.record ?? whole(wire)
                    for field in wire.present {
                        record.set(field, wire.values[field], stamp: wire.stamps?[field] ?? record.stamps[field])
                    }
                    changes.append(PendingChange(
                        entity: entity.name, id: id, kind: .update, fields: wire.present, record: record, revision: wire.revision))
                }
                for id in entityChanges.delete {
                    let record = try store.record(entity.name, id: id) ?? records[id].map(whole)
                        ?? Record(entity: entity.name, id: id, values: ContiguousArray(repeating: .null, count: entity.fields.count),
                                  stamps: ContiguousArray(repeating: .none, count: entity.fields.count))
                    changes.append(PendingChange(
                        entity: entity.name, id: id, kind: .delete, fields: FieldMask(), record: record, revision: records[id]?.revision))
                }
            }
        }
        return changes
    }
}
