import FieldMerge
import FieldMergeProtocol
import Testing

/// A response read in pieces (`WireCodec.decodeResponse(_:piecesOf:_:)`) hands on every
/// record once, with the create and delete ids among them, and returns the rest.
@Suite struct WirePiecesTests {
    /// Two change sets: 7 things (created 1–5, deleted 6–7) and 3 notes; then 4 things
    /// updated, one of them (id 2) again.
    func response() -> SyncResponse {
        var things = EntityChanges(entity: "things", create: [1, 2, 3, 4, 5], delete: [6, 7])
        things.records = (1...7).map { wireRecord(wireThings, id: $0, ["title": .text("t\($0)")], revision: 3) }
        var notes = EntityChanges(entity: "notes", create: [-3, -2, -1])
        notes.records = [-3, -2, -1].map { wireRecord(wireNotes, id: $0, ["body": .text("n\($0)")], revision: 3) }
        var again = EntityChanges(entity: "things", update: [2, 8, 9, 10])
        again.records = [2, 8, 9, 10].map { wireRecord(wireThings, id: $0, ["count": .integer($0)], revision: 4) }
        again.leave = [11]
        return SyncResponse(
            maxRevision: 4, changeSets: [ChangeSet(entities: [things, notes]), ChangeSet(entities: [again])], hasMore: true,
            horizon: 2)
    }

    /// The response without its records: what reading in pieces returns.
    func skeleton(_ response: SyncResponse) -> SyncResponse {
        var skeleton = response
        for c in skeleton.changeSets.indices {
            for e in skeleton.changeSets[c].entities.indices { skeleton.changeSets[c].entities[e].records = [] }
        }
        return skeleton
    }

    func read(_ bytes: [UInt8], size: Int) throws -> (SyncResponse, [EntityChanges]) {
        var pieces: [EntityChanges] = []
        let rest = try wireCodec.decodeResponse(bytes, piecesOf: size) { pieces.append($0) }
        return (rest, pieces)
    }

    @Test(arguments: [1, 2, 3, 7, 1_000]) func everyRecordGoesOnOnce_withItsCreateAndDeleteIds(size: Int) throws {
        let response = response()
        let (rest, pieces) = try read(wireCodec.encode(response), size: size)
        #expect(rest == skeleton(response))
        #expect(pieces.allSatisfy { $0.records.count <= size && !$0.records.isEmpty })
        let whole = try wireCodec.decodeResponse(wireCodec.encode(response))
        let expected = whole.changeSets.flatMap { $0.entities.flatMap { entity in entity.records.map { (entity.entity, $0) } } }
        let got = pieces.flatMap { piece in piece.records.map { (piece.entity, $0) } }
        #expect(got.map(\.0) == expected.map(\.0))
        #expect(got.map(\.1) == expected.map(\.1))
        for piece in pieces {
            let ids = piece.records.map(\.id)
            let lists = piece.entity == "notes" ? (create: [Int64]([-3, -2, -1]), delete: [Int64]()) : (create: [1, 2, 3, 4, 5], delete: [6, 7])
            let second = piece.records.first?.revision == 4
            #expect(piece.create == (second ? [] : ids.filter(lists.create.contains)))
            #expect(piece.delete == (second ? [] : ids.filter(lists.delete.contains)))
            #expect(piece.update.isEmpty && piece.leave.isEmpty && piece.recreate.isEmpty)
        }
    }

    @Test func recordsBeforeTheirListsOrTypes_goOnOnceTheChangeSetIsRead() throws {
        // Keys in another order than FieldMerge writes them: attributes before create and
        // delete, and the change set's types after its objects.
        let text = """
            {"changeSets":[{"notes":{"attributes":{"1":{"body":"a"},"2":{"body":"b"}},"delete":[2],"create":[1],"update":[]},
            "things":{"create":[],"update":[5],"delete":[],"attributes":{"5":{"count":5}}},"types":["things","notes"]}],
            "maxRevision":9}
            """
        var order: [String] = []
        var pieces: [EntityChanges] = []
        let rest = try wireCodec.decodeResponse(wireBytes(text), piecesOf: 1) { piece in
            order.append(piece.entity)
            pieces.append(piece)
        }
        #expect(rest.maxRevision == 9)
        #expect(rest.changeSets.first?.entities.map(\.entity) == ["things", "notes"])
        #expect(rest.changeSets.first?.entities.last?.delete == [2])
        #expect(order == ["things", "notes", "notes"])
        #expect(pieces.map { $0.records.map(\.id) } == [[5], [1], [2]])
        #expect(pieces.map(\.create) == [[], [1], []])
        #expect(pieces.map(\.delete) == [[], [], [2]])
    }

    @Test func aTypeListedWithoutItsObject_isRefused_andNothingOfThatChangeSetWentOnBeforeTheCheck() throws {
        // Types after the object: its records wait for the change set's check, which fails.
        let text = """
            {"maxRevision":1,"changeSets":[{"notes":{"create":[1],"update":[],"delete":[],"attributes":{"1":{"body":"a"}}},
            "types":["notes","things"]}]}
            """
        var pieces = 0
        #expect(throws: WireError.self) { try wireCodec.decodeResponse(wireBytes(text), piecesOf: 1) { _ in pieces += 1 } }
        #expect(pieces == 0)
    }

    @Test func aBodyCutShort_throwsAfterThePiecesReadBeforeTheCut() throws {
        let bytes = wireCodec.encode(response())
        let cut = Array(bytes[..<(bytes.count * 2 / 3)])
        var ids: [Int64] = []
        var thrown: (any Error)?
        do {
            _ = try wireCodec.decodeResponse(cut, piecesOf: 1) { ids += $0.records.map(\.id) }
        } catch {
            thrown = error
        }
        #expect((thrown as? WireError)?.code == .malformedJSON)
        // Records read whole before the cut went on, in order, and nothing after it.
        #expect(!ids.isEmpty)
        #expect(ids == Array([1, 2, 3, 4, 5, 6, 7, -3, -2, -1, 2, 8, 9, 10].prefix(ids.count)))
    }

    @Test func anErrorOfTheReader_endsTheReading_andIsRethrownAsItIs() throws {
        struct Stop: Error {}
        var pieces = 0
        #expect(throws: Stop.self) {
            try wireCodec.decodeResponse(wireCodec.encode(response()), piecesOf: 2) { _ in
                pieces += 1
                if pieces == 2 { throw Stop() }
            }
        }
        #expect(pieces == 2)
    }

    @Test(arguments: [
        // Ascending, then a repeat of an id that went on in an earlier piece.
        #"{"1":{},"2":{},"3":{},"1":{}}"#,
        // Not monotone from the third id on, and a repeat of the first.
        #"{"1":{},"5":{},"3":{},"1":{}}"#,
    ]) func anIdRepeatedAcrossPieces_isADuplicate(attributes: String) throws {
        let text = #"{"maxRevision":1,"changeSets":[{"types":["notes"],"notes":{"create":[],"update":[],"delete":[],"attributes":"#
            + attributes + "}}]}"
        var thrown: (any Error)?
        do { _ = try wireCodec.decodeResponse(wireBytes(text), piecesOf: 1) { _ in } } catch { thrown = error }
        #expect((thrown as? WireError)?.code == .duplicateKey)
        // The same body read whole says the same.
        #expect(throws: WireError.self) { try wireCodec.decodeResponse(wireBytes(text)) }
    }
}
