@testable import FieldMerge
import Testing

/// At clock value 2^64 - 1 (the packed clock's end: 48-bit milliseconds and 16-bit counter
/// both full) nothing may wrap: a computed stamp is never older than a side's stamp, and the
/// clock stops instead of overflowing.
@Suite struct ClockEndTests {
    private let end = Stamp(clock: .max, replica: ReplicaID(9))

    /// A counter conflict whose newer side is at the clock's end, through the whole merge and
    /// with either side local; resolution stamps before, at and after the end's replica.
    @Test(arguments: [Stamp.none, Stamp(clock: 5, replica: ReplicaID(1)), Stamp(clock: .max, replica: ReplicaID(20))])
    func aComputedCounterAtTheClocksEndIsNeverOlderThanASide(resolution: Stamp) {
        let entity = taskEntity(strategies: ["count": .counter])
        let base = record(entity, at: stamp(100), ["count": 10])
        let atEnd = base.with("count", 11, at: end, in: entity)
        let other = base.with("count", 13, at: stamp(300, replicaR), in: entity)
        for (local, remote) in [(atEnd, other), (other, atEnd)] {
            let result = merge(entity, base, local, remote, resolution: resolution)
            #expect(result.merged.value("count", in: entity) == 14)
            let merged = result.merged.stamp("count", in: entity)
            #expect(merged.clock == .max)
            #expect(merged >= end && merged >= stamp(300, replicaR))
            #expect(merged == max(resolution, Stamp(clock: .max, replica: max(end.replica, resolution.replica))))
            #expect(result.conflicts.first?.winner == .merged)
            // The merged stamp is never smaller than the server's, so the sum goes up.
            #expect(result.upload.contains(entity.fieldIndex("count")!))
        }
    }

    /// A record rule's change takes the computed stamp too.
    @Test func aRecordRuleAtTheClocksEndNeverWraps() {
        let rule = ClosureRecordStrategy(name: "titleFromCount") { input in
            var values = input.proposal
            values[0] = "changed by rule"
            return values
        }
        let entity = taskEntity(recordStrategy: rule)
        let base = record(entity, at: stamp(100), ["title": "t", "count": 1])
        let local = base.with("title", "mine", at: end, in: entity)
        let remote = base.with("count", 2, at: stamp(300, replicaR), in: entity)
        let result = merge(entity, base, local, remote, resolution: stamp(400, ReplicaID(3)))
        #expect(result.merged.value("title", in: entity) == "changed by rule")
        #expect(result.merged.stamp("title", in: entity) == Stamp(clock: .max, replica: ReplicaID(9)))
        #expect(result.conflicts.map(\.kind) == [.recordRule])
    }

    @Test func theClockStopsAtItsEnd() {
        let wall = ManualWallClock(milliseconds: 1_000)
        var clock = HybridClock(replica: replicaL, last: .max, wall: wall)
        #expect(clock.now().clock == .max)
        #expect(clock.now().clock == .max)
        _ = clock.observe(end)
        #expect(clock.now() == Stamp(clock: .max, replica: replicaL))
    }
}
