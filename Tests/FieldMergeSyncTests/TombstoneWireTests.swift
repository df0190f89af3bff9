import FieldMerge
import FieldMergeSQLite
@testable import FieldMergeSync
import FieldMergeProtocol
@testable import FieldMergeServer
import FieldMergeServerSQLite
import FieldMergeTestSupport
import Testing

/// Deletes travel with their tombstone's stamp, so every replica resolves delete against
/// edit by the same stamps.
@Suite struct TombstoneWireTests {
    let schema: Schema
    let screens: Entity
    static let now: UInt64 = 1_700_000_000_000

    init() throws {
        schema = try caseStudySchema()
        screens = schema.entity("screens")!
    }

    func deletion(_ id: Int64, revision: Int64, stamp: Stamp?) -> EntityChanges {
        let record = WireRecord(
            id: id, present: FieldMask(), values: [.null], stamps: stamp.map { [$0] }, revision: revision, oldID: nil)
        return EntityChanges(entity: "screens", delete: [id], records: [record])
    }

    func request(_ changes: EntityChanges, maxRevision: Int64) -> SyncRequest {
        SyncRequest(maxRevision: maxRevision, changeSets: [ChangeSet(entities: [changes])], clientID: nil, requestID: nil, limit: nil)
    }

    @Test func theClientsDeleteStampIsKeptAndSentWithEveryAnswer() async throws {
        let server = try RevisionServer(.memory, schema: schema, wall: ManualWallClock(milliseconds: Self.now))
        _ = try await server.handle(request(changes("screens", create: [wire(screens, -1, ["name": "a"])], schema: schema), maxRevision: 0))
        let stamp = Stamp(milliseconds: Self.now - 5_000, replica: ReplicaID(7))
        let answer = try await server.handle(request(deletion(1, revision: 1, stamp: stamp), maxRevision: 1))
        #expect(answer.changeSets.last?.entities.first?.records.first?.stamps == [stamp])
        // Catch-up of a replica that never saw the record.
        let catchUp = try await server.handle(SyncRequest(maxRevision: 0, changeSets: []))
        let record = try #require(catchUp.changeSets.first?.entities.first?.records.first)
        #expect(catchUp.changeSets.first?.entities.first?.delete == [1])
        #expect(record.stamps == [stamp])
        // The truth of a conflict (an update of the deleted record).
        let stale = try await server.handle(request(changes("screens", update: [wire(screens, 1, ["name": "b"], revision: 1)], schema: schema), maxRevision: 2))
        #expect(stale.changeSets.last?.conflict == true)
        #expect(stale.changeSets.last?.entities.first?.records.first?.stamps == [stamp])
    }

    @Test func aDeleteWithoutStampGetsTheServersAndAStampFromTheFutureIsClamped() async throws {
        let server = try RevisionServer(.memory, schema: schema, wall: ManualWallClock(milliseconds: Self.now))
        _ = try await server.handle(request(changes("screens", create: [
            wire(screens, -1, ["name": "a"]), wire(screens, -2, ["name": "b"]),
        ], schema: schema), maxRevision: 0))
        let plain = try await server.handle(request(deletion(1, revision: 1, stamp: nil), maxRevision: 1))
        let given = try #require(plain.changeSets.last?.entities.first?.records.first?.stamps?.first)
        #expect(given.replica == ReplicaID(0x5E_5E) && given.milliseconds >= Self.now)
        let future = Stamp(milliseconds: Self.now + 86_400_000, replica: ReplicaID(7))
        let clamped = try await server.handle(request(deletion(2, revision: 1, stamp: future), maxRevision: 2))
        let kept = try #require(clamped.changeSets.last?.entities.first?.records.first?.stamps?.first)
        #expect(kept < future && kept.milliseconds <= Self.now + RevisionServer.Options().maxDrift)
    }

    @Test func aClientTakesTheSentStampAsTheTombstone_orItsOwnWithoutOne() async throws {
        let own = Stamp(milliseconds: Self.now, replica: ReplicaID(1))
        let sent = Stamp(milliseconds: Self.now - 9_000, replica: ReplicaID(7))
        let withStamp = WireRecord(id: 3, present: FieldMask(), values: [.null], stamps: [sent], revision: 4, oldID: nil)
        let record = ResponseApplier.record(withStamp, entity: screens, deleted: true, stamp: own)
        #expect(record.tombstone == sent)
        #expect(record.stamps == [.none])
        let plain = WireRecord(id: 3, present: FieldMask(), values: [.null], stamps: nil, revision: 4, oldID: nil)
        #expect(ResponseApplier.record(plain, entity: screens, deleted: true, stamp: own).tombstone == own)
    }
}
