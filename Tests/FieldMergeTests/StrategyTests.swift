import Testing
@testable import FieldMerge

@Suite struct StrategyTests {
    func conflict(
        _ strategy: FieldStrategy, field: String, ancestor: Value, local: Value, remote: Value,
        localNewer: Bool = false
    ) -> MergeResult {
        let entity = taskEntity(strategies: [field: strategy])
        let base = record(entity, at: stamp(100), [field: ancestor])
        let l = base.with(field, local, at: stamp(localNewer ? 400 : 200), in: entity)
        let r = base.with(field, remote, at: stamp(300, replicaR), in: entity)
        return merge(entity, base, l, r)
    }

    func value(_ result: MergeResult, _ field: String) -> Value {
        result.merged.value(field, in: taskEntity())
    }

    @Test func serverWins_takesRemoteEvenWhenLocalIsNewer() {
        let result = conflict(.serverWins, field: "title", ancestor: "a", local: "l", remote: "r", localNewer: true)
        #expect(value(result, "title") == "r")
        #expect(result.conflicts.first?.winner == .remote)
    }

    @Test func clientWins_takesLocalEvenWhenRemoteIsNewer() {
        let result = conflict(.clientWins, field: "title", ancestor: "a", local: "l", remote: "r")
        #expect(value(result, "title") == "l")
        #expect(result.upload == FieldMask([0]))
    }

    @Test func max_andMin_byNaturalOrder() {
        #expect(value(conflict(.max, field: "count", ancestor: 1, local: 7, remote: 3), "count") == 7)
        #expect(value(conflict(.min, field: "count", ancestor: 1, local: 7, remote: 3), "count") == 3)
        #expect(value(conflict(.max, field: "title", ancestor: "a", local: "b", remote: "c"), "title") == "c")
        #expect(value(conflict(.max, field: "count", ancestor: 1, local: nil, remote: 3), "count") == 3)
        #expect(value(conflict(.min, field: "count", ancestor: 1, local: nil, remote: 3), "count") == .null)
    }

    @Test func counter_concurrentIncrementsBothCount() {
        let result = conflict(.counter, field: "count", ancestor: 0, local: 2, remote: 3)
        #expect(value(result, "count") == 5)
        let report = try! #require(result.conflicts.first)
        #expect(report.winner == .merged && report.strategy == "counter")
        // The computed value is newer than both sides, and must be uploaded.
        let merged = result.merged.stamp("count", in: taskEntity())
        #expect(merged > stamp(300, replicaR) && merged > stamp(200))
        #expect(result.upload.contains(1) && result.writeLocally.contains(1))
    }

    @Test func counter_decrementsAndReals() {
        #expect(value(conflict(.counter, field: "count", ancestor: 10, local: 7, remote: 12), "count") == 9)
        #expect(value(conflict(.counter, field: "score", ancestor: 1.5, local: 2.5, remote: 4.0), "score") == .real(5.0))
    }

    @Test func counter_withNullFallsBackToLastEditWins() {
        let result = conflict(.counter, field: "count", ancestor: 0, local: nil, remote: 3)
        #expect(value(result, "count") == 3)
    }

    @Test func union_keepsAdditionsAndRemovalsOfBothSides() {
        let result = conflict(
            .union, field: "tags", ancestor: .textSet(["a", "b", "c"]),
            local: .textSet(["a", "b", "x"]),  // removed c, added x
            remote: .textSet(["b", "c", "y"]))  // removed a, added y
        #expect(value(result, "tags") == .textSet(["b", "x", "y"]))
    }

    @Test func union_nullCountsAsEmptySet() {
        let result = conflict(.union, field: "tags", ancestor: nil, local: .textSet(["a"]), remote: .textSet(["b"]))
        #expect(value(result, "tags") == .textSet(["a", "b"]))
    }

    @Test func text_mergesEditsOfDifferentLines() {
        let result = conflict(
            .text, field: "notes", ancestor: "one\ntwo\nthree\nfour\n",
            local: "ONE\ntwo\nthree\nfour\n", remote: "one\ntwo\nthree\nFOUR\n")
        #expect(value(result, "notes") == "ONE\ntwo\nthree\nFOUR\n")
        #expect(result.conflicts.first?.winner == .merged)
    }

    @Test func text_overlappingEditsFallBackToLastEditWins() {
        let result = conflict(
            .text, field: "notes", ancestor: "one\ntwo\n", local: "uno\ntwo\n", remote: "eins\ntwo\n")
        #expect(value(result, "notes") == "eins\ntwo\n")
        #expect(result.conflicts.first?.winner == .remote)
    }

    @Test func customFieldStrategy_decidesWithoutTouchingTheCore() {
        let longest = FieldStrategy.custom("longestText") { input in
            guard case .text(let l) = input.local, case .text(let r) = input.remote else { return input.lastEdit }
            return l.count >= r.count ? input.local : input.remote
        }
        let result = conflict(longest, field: "title", ancestor: "a", local: "a longer title", remote: "short")
        #expect(value(result, "title") == "a longer title")
        #expect(result.conflicts.first?.strategy == "longestText")
    }

    @Test func customStrategyReturningANewValue_getsAComputedStamp() {
        let joined = FieldStrategy.custom("join") { input in
            guard case .text(let l) = input.local, case .text(let r) = input.remote else { return input.lastEdit }
            return .text(min(l, r) + "+" + max(l, r))
        }
        let result = conflict(joined, field: "title", ancestor: "a", local: "l", remote: "r")
        #expect(value(result, "title") == "l+r")
        #expect(result.merged.stamp("title", in: taskEntity()) == Stamp(clock: 1_000, replica: ReplicaID(9)))
    }

    @Test func recordStrategy_enforcesARuleAcrossFields() {
        // "done implies count set to 100": a rule across two fields.
        let rule = ClosureRecordStrategy(name: "doneMeansFull") { input in
            var values = input.proposal
            if values[4] == true { values[1] = 100 }
            return values
        }
        let entity = taskEntity(recordStrategy: rule)
        let base = record(entity, at: stamp(100), ["count": 10, "done": false])
        let local = base.with("count", 20, at: stamp(200), in: entity)
        let remote = base.with("done", true, at: stamp(300, replicaR), in: entity)
        let result = merge(entity, base, local, remote)
        #expect(result.merged.value("count", in: entity) == 100)
        #expect(result.merged.value("done", in: entity) == true)
        #expect(result.conflicts.map(\.kind) == [.recordRule])
        #expect(result.upload.contains(1))
    }

    @Test func recordStrategy_doesNotRunWhenOnlyOneSideChanged() {
        let rule = ClosureRecordStrategy(name: "always100") { input in
            var values = input.proposal
            values[1] = 100
            return values
        }
        let entity = taskEntity(recordStrategy: rule)
        let base = record(entity, at: stamp(100), ["count": 10])
        let remote = base.with("done", true, at: stamp(300, replicaR), in: entity)
        #expect(merge(entity, base, base, remote).merged.value("count", in: entity) == 10)
    }
}

@Suite struct DeletePolicyTests {
    func scenario(_ policy: DeletePolicy, localDeletes: Bool, deleteAt: UInt64 = 300, editAt: UInt64 = 200)
        -> (MergeResult, Entity)
    {
        let entity = taskEntity(deletePolicy: policy)
        let base = record(entity, at: stamp(100), ["title": "t"])
        let deleted = base.deleted(at: stamp(deleteAt, localDeletes ? replicaL : replicaR))
        let edited = base.with("title", "edited", at: stamp(editAt, localDeletes ? replicaR : replicaL), in: entity)
        let result = localDeletes ? merge(entity, base, deleted, edited) : merge(entity, base, edited, deleted)
        return (result, entity)
    }

    @Test(arguments: [true, false])
    func deleteWins_recordStaysDeleted(localDeletes: Bool) {
        let (result, _) = scenario(.deleteWins, localDeletes: localDeletes)
        #expect(result.merged.isDeleted)
        #expect(result.deletesRemotely == localDeletes)
        #expect(result.deletesLocally == !localDeletes)
        #expect(result.conflicts.map(\.kind) == [.deleteVsEdit])
        #expect(result.conflicts.first?.winner == (localDeletes ? .local : .remote))
    }

    @Test(arguments: [true, false])
    func editWins_editResurrectsTheRecord(localDeletes: Bool) {
        let (result, entity) = scenario(.editWins, localDeletes: localDeletes)
        #expect(!result.merged.isDeleted)
        #expect(result.merged.value("title", in: entity) == "edited")
        #expect(result.restoresLocally == localDeletes)
        #expect(result.recreatesRemotely == !localDeletes)
        #expect((localDeletes ? result.writeLocally : result.upload) == entity.allFields)
    }

    @Test(arguments: [true, false])
    func lastEditWins_newerDeleteWins(localDeletes: Bool) {
        let (result, _) = scenario(.lastEditWins, localDeletes: localDeletes, deleteAt: 300, editAt: 200)
        #expect(result.merged.isDeleted)
    }

    @Test(arguments: [true, false])
    func lastEditWins_newerEditWins(localDeletes: Bool) {
        let (result, entity) = scenario(.lastEditWins, localDeletes: localDeletes, deleteAt: 200, editAt: 300)
        #expect(!result.merged.isDeleted)
        #expect(result.merged.value("title", in: entity) == "edited")
    }

    @Test func deleteAgainstUnchangedRecord_isNoConflict() {
        let entity = taskEntity()
        let base = record(entity, at: stamp(100), ["title": "t"])
        let result = merge(entity, base, base.deleted(at: stamp(200)), base)
        #expect(result.merged.isDeleted && result.deletesRemotely && result.conflicts.isEmpty)
    }

    @Test func bothDeleted_staysDeletedWithLargerTombstone() {
        let entity = taskEntity()
        let base = record(entity, at: stamp(100))
        let result = merge(entity, base, base.deleted(at: stamp(300)), base.deleted(at: stamp(200, replicaR)))
        #expect(result.merged.tombstone == stamp(300))
        #expect(result.merged.stamps == base.stamps)
        #expect(result.conflicts.isEmpty && !result.deletesRemotely && !result.deletesLocally)
    }

    @Test func recreatedAfterAcknowledgedDelete_isAlive() {
        let entity = taskEntity()
        let gone = record(entity, at: stamp(100)).deleted(at: stamp(150))
        let recreated = record(entity, at: stamp(200), ["title": "again"])
        let result = merge(entity, gone, recreated, gone)
        #expect(!result.merged.isDeleted)
        #expect(result.recreatesRemotely)
        #expect(result.conflicts.isEmpty)
    }
}
