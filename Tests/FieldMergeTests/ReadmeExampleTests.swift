import Testing
import FieldMerge

/// The README's quick start, verbatim, so that it keeps compiling and telling the truth.
@Suite struct ReadmeExampleTests {
    @Test func quickStart_counterSumsAndRemoteFieldArrives() throws {
        let tasks = Entity("tasks", fields: [
            Field("title", .text),                                 // lastEditWins, the default
            Field("notes", .text, strategy: .text),                // line-based three-way merge
            Field("done", .bool),
            Field("minutesSpent", .integer, strategy: .counter),   // concurrent increments both count
            Field("tags", .textSet, strategy: .union),             // additions and removals of both sides
            Field("completedAt", .date),
        ])
        let schema = try Schema([tasks])                           // validated: names, types, strategies

        var clock = HybridClock(replica: ReplicaID(0xA11CE))
        let ancestor = Record(tasks, id: 42, values: ["Write spec", "", false, 30, .textSet(["docs"]), nil],
                              stamp: Stamp(milliseconds: 1_700_000_000_000, replica: ReplicaID(1)))
        var local = ancestor
        local.set(3, 45, stamp: clock.now())                       // +15 minutes here
        var remote = ancestor
        remote.set(3, 40, stamp: Stamp(milliseconds: 1_700_000_100_000, replica: ReplicaID(0xB0B)))  // +10 there
        remote.set(2, true, stamp: Stamp(milliseconds: 1_700_000_100_000, replica: ReplicaID(0xB0B)))

        let result = try ThreeWayMerge.merge(tasks, ancestor: ancestor, local: local, remote: remote,
                                             context: MergeContext(resolutionStamp: clock.now()))
        #expect(schema.entity("tasks") != nil)
        #expect(result.merged.values[3] == 55)
        #expect(result.merged.values[2] == true)
        #expect(result.upload == FieldMask([3]))
        #expect(result.conflicts.count == 1)
        #expect(result.conflicts.first?.field == "minutesSpent" && result.conflicts.first?.winner == .merged)
    }

    @Test func customStrategies_fromTheReadme() throws {
        let longestTitle = FieldStrategy.custom("longestTitle") { input in
            guard case .text(let l) = input.local, case .text(let r) = input.remote else { return input.lastEdit }
            return l.count == r.count ? input.lastEdit : (l.count > r.count ? input.local : input.remote)
        }
        let doneHasDate = ClosureRecordStrategy(name: "doneHasDate") { input in
            var values = input.proposal                            // what the field strategies chose
            if values[2] == true, values[5] == .null { values[5] = .date(1_700_000_000_000) }
            return values
        }
        let tasks = Entity("tasks", fields: [
            Field("title", .text, strategy: longestTitle), Field("notes", .text), Field("done", .bool),
            Field("minutes", .integer), Field("tags", .textSet), Field("completedAt", .date),
        ], recordStrategy: doneHasDate)
        _ = try Schema([tasks])
        let base = Record(tasks, id: 1, values: ["a", "", false, 0, .textSet([]), nil],
                          stamp: Stamp(clock: 100, replica: ReplicaID(1)))
        var local = base, remote = base
        local.set(0, "a much longer title", stamp: Stamp(clock: 200, replica: ReplicaID(1)))
        remote.set(0, "short", stamp: Stamp(clock: 300, replica: ReplicaID(2)))
        remote.set(2, true, stamp: Stamp(clock: 300, replica: ReplicaID(2)))
        let result = try ThreeWayMerge.merge(tasks, ancestor: base, local: local, remote: remote)
        #expect(result.merged.values[0] == "a much longer title")
        #expect(result.merged.values[5] == .date(1_700_000_000_000))
        #expect(result.conflicts.map(\.kind) == [.field, .recordRule])
    }
}
