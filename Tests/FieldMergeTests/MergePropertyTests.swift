import Testing
@testable import FieldMerge

/// Merge laws over many thousands of seeded random triples.
@Suite struct MergePropertyTests {
    static let strategies: [FieldStrategy] = [.lastEditWins, .serverWins, .clientWins, .max, .min]

    /// A random entity for one strategy: the strategy on every field it can decide.
    static func entity(_ strategy: FieldStrategy, policy: DeletePolicy = .lastEditWins) -> Entity {
        let numeric: FieldStrategy = strategy.name == "union" || strategy.name == "text" ? .lastEditWins : strategy
        let textual: FieldStrategy = strategy.name == "counter" || strategy.name == "union" ? .lastEditWins : strategy
        let setStrategy: FieldStrategy = ["counter", "text", "max", "min"].contains(strategy.name) ? .lastEditWins : strategy
        return Entity("things", fields: [
            Field("a", .integer, strategy: numeric), Field("b", .text, strategy: textual),
            Field("c", .textSet, strategy: setStrategy), Field("d", .real, strategy: numeric),
        ], deletePolicy: policy)
    }

    struct Triple { var ancestor: Record?; var local: Record; var remote: Record }

    static func randomValue(_ field: Int, _ g: inout SeededGenerator) -> Value {
        if g.next() % 7 == 0 { return .null }
        switch field {
        case 0: return .integer(Int64(g.next() % 5))
        case 1: return .text(["x", "y", "z\nw", "x\ny\n", ""][Int(g.next() % 5)])
        case 2: return .textSet(TextSet(["p", "q", "r"].filter { _ in g.next() % 2 == 0 }))
        default: return .real(Double(g.next() % 4) / 2)
        }
    }

    /// A base record and two sides that each edit a random subset of fields with stamps that
    /// may tie in clock value, and sometimes delete.
    static func randomTriple(_ entity: Entity, _ g: inout SeededGenerator) -> Triple {
        let fieldCount = entity.fields.count
        var base = Record(
            entity: entity.name, id: 1, values: ContiguousArray((0..<fieldCount).map { randomValue($0, &g) }),
            stamps: ContiguousArray(repeating: Stamp(clock: 100, replica: ReplicaID(5)), count: fieldCount))
        func side(_ replica: ReplicaID, _ g: inout SeededGenerator) -> Record {
            var record = base
            for field in 0..<fieldCount where g.next() % 2 == 0 {
                record.set(field, randomValue(field, &g), stamp: Stamp(clock: 101 + g.next() % 3, replica: replica))
            }
            if g.next() % 10 == 0 { record.tombstone = Stamp(clock: 101 + g.next() % 3, replica: replica) }
            return record
        }
        let local = side(replicaL, &g), remote = side(replicaR, &g)
        if g.next() % 8 == 0 { base.tombstone = nil; return Triple(ancestor: nil, local: local, remote: remote) }
        return Triple(ancestor: base, local: local, remote: remote)
    }

    static let resolution = MergeContext(resolutionStamp: Stamp(clock: 1_000, replica: ReplicaID(7)))

    @Test(arguments: strategies + [.counter, .union, .text])
    func deterministic(_ strategy: FieldStrategy) throws {
        var g = SeededGenerator(seed: 1)
        let entity = Self.entity(strategy)
        for _ in 0..<3_000 {
            let t = Self.randomTriple(entity, &g)
            let first = try ThreeWayMerge.merge(entity, ancestor: t.ancestor, local: t.local, remote: t.remote, context: Self.resolution)
            let second = try ThreeWayMerge.merge(entity, ancestor: t.ancestor, local: t.local, remote: t.remote, context: Self.resolution)
            #expect(first == second)
        }
    }

    /// merge(A, L, R) == merge(A, R, L) for the strategies that favour no side (not
    /// serverWins, clientWins, nor text, whose fallback on overlapping edits keeps one side's
    /// lines), under every delete policy.
    @Test(arguments: [FieldStrategy.lastEditWins, .max, .min, .counter, .union])
    func symmetric(_ strategy: FieldStrategy) throws {
        var g = SeededGenerator(seed: 2)
        for policy in DeletePolicy.allCases {
            let entity = Self.entity(strategy, policy: policy)
            for _ in 0..<2_000 {
                let t = Self.randomTriple(entity, &g)
                let lr = try ThreeWayMerge.merge(entity, ancestor: t.ancestor, local: t.local, remote: t.remote, context: Self.resolution)
                let rl = try ThreeWayMerge.merge(entity, ancestor: t.ancestor, local: t.remote, remote: t.local, context: Self.resolution)
                #expect(lr.merged.values == rl.merged.values, "\(t.local) vs \(t.remote)")
                #expect(lr.merged.isDeleted == rl.merged.isDeleted)
                #expect(lr.merged.stamps == rl.merged.stamps)
                #expect(lr.conflicts.count == rl.conflicts.count)
            }
        }
    }

    @Test(arguments: strategies + [.counter, .union, .text])
    func idempotent(_ strategy: FieldStrategy) throws {
        var g = SeededGenerator(seed: 3)
        let entity = Self.entity(strategy)
        for _ in 0..<3_000 {
            let t = Self.randomTriple(entity, &g)
            let a = t.ancestor ?? t.local
            let same = try ThreeWayMerge.merge(entity, ancestor: a, local: t.local, remote: t.local, context: Self.resolution)
            #expect(same.merged == t.local && same.conflicts.isEmpty)
            let remoteOnly = try ThreeWayMerge.merge(entity, ancestor: a, local: a, remote: t.remote, context: Self.resolution)
            #expect(remoteOnly.merged.values == t.remote.values || remoteOnly.merged.isDeleted)
            #expect(remoteOnly.merged.isDeleted == (t.remote.isDeleted || a.isDeleted && t.remote.isDeleted))
            #expect(remoteOnly.upload.isEmpty && !remoteOnly.recreatesRemotely)
            let localOnly = try ThreeWayMerge.merge(entity, ancestor: a, local: t.local, remote: a, context: Self.resolution)
            #expect(localOnly.merged.values == t.local.values || localOnly.merged.isDeleted)
            #expect(localOnly.merged.isDeleted == t.local.isDeleted)
            #expect(localOnly.writeLocally.isEmpty && !localOnly.restoresLocally)
        }
    }

    @Test func batchMerge_givesTheSameResultsAsSingleMerges() throws {
        var g = SeededGenerator(seed: 4)
        for strategy in Self.strategies + [.counter, .union] {
            let entity = Self.entity(strategy)
            var triples: [Triple] = []
            var ancestors = RecordBatch(fieldCount: 4), locals = RecordBatch(fieldCount: 4), remotes = RecordBatch(fieldCount: 4)
            var present = ContiguousArray<Bool>()
            for id in 1...2_000 {
                var t = Self.randomTriple(entity, &g)
                t.local.id = Int64(id)
                t.remote.id = Int64(id)
                t.ancestor?.id = Int64(id)
                triples.append(t)
                try ancestors.append(t.ancestor ?? t.local)
                try locals.append(t.local)
                try remotes.append(t.remote)
                present.append(t.ancestor != nil)
            }
            let batch = try ThreeWayMerge.mergeBatch(
                entity, ancestors: ancestors, local: locals, remote: remotes, ancestorPresent: present,
                context: Self.resolution)
            for (index, t) in triples.enumerated() {
                let single = try ThreeWayMerge.merge(
                    entity, ancestor: t.ancestor, local: t.local, remote: t.remote, context: Self.resolution)
                #expect(batch.result(at: index) == single, "record \(index) with \(strategy)")
                #expect(batch.value(record: index, field: 0) == single.merged.values[0])
            }
            #expect(batch.conflicts.count == triples.reduce(0) { sum, t in
                sum + (try! ThreeWayMerge.merge(entity, ancestor: t.ancestor, local: t.local, remote: t.remote, context: Self.resolution)).conflicts.count
            })
        }
    }

    @Test func batchMerge_fastPathsAgreeWithSingleMerges() throws {
        // Only stamped, alive records with ancestors: every record goes through the stamp-only
        // classification or the pick path, never the general one.
        var g = SeededGenerator(seed: 5)
        let entity = Self.entity(.lastEditWins)
        var ancestors = RecordBatch(fieldCount: 4), locals = RecordBatch(fieldCount: 4), remotes = RecordBatch(fieldCount: 4)
        var triples: [Triple] = []
        for id in 1...5_000 {
            var t = Self.randomTriple(entity, &g)
            let base = t.ancestor ?? t.local
            t.ancestor = base
            t.ancestor!.tombstone = nil
            t.local.tombstone = nil
            t.remote.tombstone = nil
            for r in [\Triple.local, \Triple.remote] { t[keyPath: r].id = Int64(id) }
            t.ancestor!.id = Int64(id)
            triples.append(t)
            try ancestors.append(t.ancestor!)
            try locals.append(t.local)
            try remotes.append(t.remote)
        }
        let batch = try ThreeWayMerge.mergeBatch(entity, ancestors: ancestors, local: locals, remote: remotes, context: Self.resolution)
        let tally = batch.tally()
        #expect(tally.picked > 0 && tally.unchanged > 0 && tally.local > 0 && tally.remote > 0 && tally.merged > 0)
        for (index, t) in triples.enumerated() {
            let single = try ThreeWayMerge.merge(entity, ancestor: t.ancestor, local: t.local, remote: t.remote, context: Self.resolution)
            #expect(batch.result(at: index) == single)
        }
    }
}
