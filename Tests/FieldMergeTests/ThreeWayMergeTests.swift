import Testing
@testable import FieldMerge

@Suite struct ThreeWayMergeTests {
    let entity = taskEntity()
    var base: Record { record(entity, at: stamp(100), ["title": "Buy milk", "count": 1, "done": false]) }

    // MARK: The table of Specs/merge-semantics.md §4, row by row

    @Test func neitherSideChanged_keepsAncestor() {
        let result = merge(entity, base, base, base)
        #expect(result.merged == base)
        #expect(result.upload.isEmpty && result.writeLocally.isEmpty && result.conflicts.isEmpty)
    }

    @Test func onlyLocalChanged_keepsLocalAndUploadsIt() {
        let local = base.with("title", "Buy oat milk", at: stamp(200), in: entity)
        let result = merge(entity, base, local, base)
        #expect(result.merged == local)
        #expect(result.upload == FieldMask([0]))
        #expect(result.writeLocally.isEmpty)
        #expect(result.conflicts.isEmpty)
    }

    @Test func onlyRemoteChanged_writesRemoteLocallyWithoutUpload() {
        let remote = base.with("done", true, at: stamp(200, replicaR), in: entity)
        let result = merge(entity, base, base, remote)
        #expect(result.merged == remote)
        #expect(result.writeLocally == FieldMask([4]))
        #expect(result.upload.isEmpty)
    }

    @Test func bothChangedToSameValue_noConflictLargerStamp() {
        let local = base.with("title", "Eggs", at: stamp(300), in: entity)
        let remote = base.with("title", "Eggs", at: stamp(200, replicaR), in: entity)
        let result = merge(entity, base, local, remote)
        #expect(result.conflicts.isEmpty)
        #expect(result.merged.value("title", in: entity) == "Eggs")
        #expect(result.merged.stamp("title", in: entity) == stamp(300))
        // The server has the value but not the newer stamp: the stamp is uploaded.
        #expect(result.upload == FieldMask([0]))
        #expect(result.writeLocally.isEmpty)
    }

    @Test func bothChangedDifferently_remoteNewerWins() {
        let local = base.with("title", "Buy oat milk", at: stamp(200), in: entity)
        let remote = base.with("title", "Buy milk and bread", at: stamp(300, replicaR), in: entity)
        let result = merge(entity, base, local, remote)
        #expect(result.merged.value("title", in: entity) == "Buy milk and bread")
        #expect(result.merged.stamp("title", in: entity) == stamp(300, replicaR))
        #expect(result.upload.isEmpty)
        #expect(result.writeLocally == FieldMask([0]))
        let conflict = try! #require(result.conflicts.first)
        #expect(result.conflicts.count == 1)
        #expect(conflict.field == "title" && conflict.kind == .field)
        #expect(conflict.ancestor == "Buy milk" && conflict.local == "Buy oat milk")
        #expect(conflict.remote == "Buy milk and bread" && conflict.winner == .remote)
        #expect(conflict.strategy == "lastEditWins" && conflict.result == "Buy milk and bread")
    }

    @Test func bothChangedDifferently_localNewerWinsAndIsUploaded() {
        let local = base.with("title", "Buy oat milk", at: stamp(400), in: entity)
        let remote = base.with("title", "Buy milk and bread", at: stamp(300, replicaR), in: entity)
        let result = merge(entity, base, local, remote)
        #expect(result.merged.value("title", in: entity) == "Buy oat milk")
        #expect(result.upload == FieldMask([0]))
        #expect(result.writeLocally.isEmpty)
        #expect(result.conflicts.first?.winner == .local)
    }

    @Test func differentFieldsOnEachSide_bothSurvive() {
        let local = base.with("title", "Buy oat milk", at: stamp(200), in: entity)
        let remote = base.with("done", true, at: stamp(300, replicaR), in: entity)
        let result = merge(entity, base, local, remote)
        #expect(result.merged.value("title", in: entity) == "Buy oat milk")
        #expect(result.merged.value("done", in: entity) == true)
        #expect(result.upload == FieldMask([0]))
        #expect(result.writeLocally == FieldMask([4]))
        #expect(result.conflicts.isEmpty)
    }

    // MARK: Ties, nulls, missing stamps, missing ancestors

    @Test func equalClockValues_decidedByReplicaIdOnBothReplicas() {
        let fromL = base.with("title", "L", at: stamp(500, replicaL), in: entity)
        let fromR = base.with("title", "R", at: stamp(500, replicaR), in: entity)
        let onL = merge(entity, base, fromL, fromR)
        let onR = merge(entity, base, fromR, fromL)
        #expect(onL.merged.value("title", in: entity) == "R")
        #expect(onR.merged.value("title", in: entity) == "R")
        #expect(onL.merged.stamp("title", in: entity) == onR.merged.stamp("title", in: entity))
    }

    @Test func settingNullAgainstConcurrentValue_newerEditWinsEitherWay() {
        let cleared = base.with("title", nil, at: stamp(300), in: entity)
        let edited = base.with("title", "Buy bread", at: stamp(200, replicaR), in: entity)
        #expect(merge(entity, base, cleared, edited).merged.value("title", in: entity) == .null)
        let laterEdit = base.with("title", "Buy bread", at: stamp(400, replicaR), in: entity)
        #expect(merge(entity, base, cleared, laterEdit).merged.value("title", in: entity) == "Buy bread")
    }

    @Test func unstampedRows_changeDetectedByValue() {
        let plain = record(entity, at: .none, ["title": "a", "count": 1])
        let local = plain.with("title", "b", at: .none, in: entity)
        let remote = plain.with("count", 2, at: .none, in: entity)
        let result = merge(entity, plain, local, remote)
        #expect(result.merged.value("title", in: entity) == "b")
        #expect(result.merged.value("count", in: entity) == 2)
        #expect(result.conflicts.isEmpty)
    }

    @Test func noAncestor_twoWayKeepsEqualFieldsAndReportsDifferences() {
        let local = record(entity, at: stamp(200), ["title": "Same", "count": 3])
        let remote = record(entity, at: stamp(300, replicaR), ["title": "Same", "count": 4])
        let result = merge(entity, nil, local, remote)
        #expect(result.merged.value("title", in: entity) == "Same")
        #expect(result.merged.value("count", in: entity) == 4)
        #expect(result.conflicts.map(\.field) == ["count"])
        #expect(result.conflicts.first?.ancestor == nil)
    }

    @Test func mismatchedRecords_areErrors() {
        var short = base
        short.values.removeLast()
        #expect(throws: MergeError.shapeMismatch(entity: "tasks", id: 1, expected: 6, values: 5, stamps: 6)) {
            try ThreeWayMerge.merge(entity, ancestor: base, local: short, remote: base)
        }
        var other = base
        other.id = 2
        #expect(throws: MergeError.idMismatch(entity: "tasks", ancestor: 1, local: 1, remote: 2)) {
            try ThreeWayMerge.merge(entity, ancestor: base, local: base, remote: other)
        }
    }

    // MARK: The defect SQLiteData describes: a polluted ancestor

    @Test func ancestorIsNotTheUploadedRecord_remoteEditOfOtherFieldStillArrives() {
        // Local edited title and uploaded it, but the server has not acknowledged it yet; the
        // ancestor stays the acknowledged base. A concurrent remote edit of `done` must
        // arrive, and title must stay pending.
        let local = base.with("title", "Mine", at: stamp(200), in: entity)
        let remote = base.with("done", true, at: stamp(150, replicaR), in: entity)
        let result = merge(entity, base, local, remote)
        #expect(result.merged.value("done", in: entity) == true)
        #expect(result.merged.value("title", in: entity) == "Mine")
        #expect(result.upload == FieldMask([0]))
    }
}

@Suite struct ComputedStampTests {
    /// At the clock's end there is no successor: the computed stamp never wraps to a small
    /// clock, and is never older than either side's.
    @Test func atTheClocksEnd_theComputedStampNeverWraps() {
        let end = Stamp(clock: .max, replica: ReplicaID(9))
        for resolution in [Stamp.none, Stamp(clock: 5, replica: ReplicaID(1)), Stamp(clock: .max, replica: ReplicaID(20))] {
            let stamp = MergeContext(resolutionStamp: resolution).computedStamp(end, Stamp(clock: 3, replica: ReplicaID(2)))
            #expect(stamp >= end)
            #expect(stamp.clock == .max)
        }
        let ordinary = MergeContext(resolutionStamp: .none).computedStamp(Stamp(clock: 7, replica: ReplicaID(1)), Stamp(clock: 9, replica: ReplicaID(2)))
        #expect(ordinary.clock == 10)
    }
}

@Suite struct DeleteVersusEditDescriptionTests {
    @Test func aDeleteVersusEditConflict_saysWhichSideDeleted() throws {
        let entity = Entity("tasks", fields: [Field("title", .text)], deletePolicy: .editWins)
        let base = Record(entity, id: 1, values: ["a"], stamp: Stamp(clock: 10, replica: ReplicaID(1)))
        var deleted = base
        deleted.tombstone = Stamp(clock: 20, replica: ReplicaID(1))
        var edited = base
        edited.set(0, "b", stamp: Stamp(clock: 30, replica: ReplicaID(2)))
        let result = try ThreeWayMerge.merge(entity, ancestor: base, local: deleted, remote: edited, context: MergeContext())
        let conflict = try #require(result.conflicts.first)
        #expect(conflict.deletedSide == .local)
        #expect(conflict.description == "deleteVsEdit conflict at tasks#1: deleted locally, edited remotely, editWins -> remote")
    }
}

@Suite struct RecordRuleUnitTests {
    /// A record rule can be tested alone, with an input built by hand.
    @Test func aRecordRule_isTestableWithoutAMerge() {
        let entity = Entity("tasks", fields: [Field("done", .bool), Field("completedAt", .date)])
        let rule = ClosureRecordStrategy(name: "doneHasDate") { input in
            var values = input.proposal
            if values[0] == true, values[1] == .null { values[1] = .date(1_700_000_000_000) }
            return values
        }
        let local = Record(entity, id: 1, values: [true, nil], stamp: Stamp(clock: 2, replica: ReplicaID(1)))
        let input = RecordMergeInput(entity: entity, ancestor: nil, local: local, remote: local, proposal: [true, .null])
        #expect(rule.merge(input) == [true, .date(1_700_000_000_000)])
    }
}
