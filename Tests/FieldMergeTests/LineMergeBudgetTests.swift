@testable import FieldMerge
import Testing

/// Lines "h", "s", then `block` and a final newline: the head line can change without touching
/// the block, because "s" separates them.
private func document(head: String, _ block: [String]) -> String {
    ([head, "s"] + block + [""]).joined(separator: "\n")
}

private func numbered(_ count: Int) -> [String] { (0..<count).map { "line \($0)" } }

/// The length of a longest common subsequence, by dynamic programming.
private func lcsLength(_ a: [Int], _ b: [Int]) -> Int {
    var table = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
    for i in a.indices.reversed() {
        for j in b.indices.reversed() {
            table[i][j] = a[i] == b[j] ? table[i + 1][j + 1] + 1 : max(table[i + 1][j], table[i][j + 1])
        }
    }
    return table[0][0]
}

@Suite struct LineMergeBudgetTests {
    /// Reversing n distinct lines needs 2n - 2 edits: 1,001 lines are exactly the budget and
    /// merge with the other side's edit; 1,002 lines are two edits over it.
    @Test func reversedLinesMergeUpToTheBudgetAndGiveUpBeyondIt() {
        #expect(LineMerge.editBudget == 2_000)
        let within = numbered(1_001)
        #expect(
            LineMerge.outcome(
                ancestor: document(head: "h", within), local: document(head: "h", within.reversed()),
                remote: document(head: "H", within))
                == .merged(document(head: "H", within.reversed())))
        let beyond = numbered(1_002)
        let ancestor = document(head: "h", beyond), local = document(head: "h", beyond.reversed())
        let remote = document(head: "H", beyond)
        #expect(LineMerge.outcome(ancestor: ancestor, local: local, remote: remote) == .editBudgetExhausted)
        #expect(LineMerge.outcome(ancestor: ancestor, local: remote, remote: local) == .editBudgetExhausted)
        #expect(LineMerge.merge(ancestor: ancestor, local: local, remote: remote) == nil)
        // The budget is a parameter: with a larger one the same texts merge.
        #expect(
            LineMerge.outcome(ancestor: ancestor, local: local, remote: remote, editBudget: 2_002)
                == .merged(document(head: "H", beyond.reversed())))
    }

    @Test func aConflictWithinTheBudgetIsAConflict_notAnExhaustedBudget() {
        let ancestor = "a\nb\nc", local = "a\nB\nc", remote = "a\nβ\nc"
        #expect(LineMerge.outcome(ancestor: ancestor, local: local, remote: remote, editBudget: 2) == .conflict)
        #expect(LineMerge.outcome(ancestor: ancestor, local: local, remote: remote, editBudget: 1) == .conflict)
    }

    /// Lines found in only one text are changes anyway and cost nothing: a wholesale rewrite
    /// of 5,000 lines on one side still merges with an edit on the other.
    @Test func linesInOnlyOneTextDoNotCountAgainstTheBudget() {
        let block = numbered(5_000)
        let rewritten = block.map { "new " + $0 }
        #expect(
            LineMerge.outcome(
                ancestor: document(head: "h", block), local: document(head: "h", rewritten),
                remote: document(head: "H", block), editBudget: 0)
                == .merged(document(head: "H", rewritten)))
    }

    /// The budget answer is exact: a diff succeeds iff its edits of lines found in both
    /// sequences (all edits minus the lines unique to one side) are within the budget, and a
    /// successful diff is still a shortest edit script.
    @Test func theDiffGivesUpExactlyWhenTheSharedLineEditsExceedTheBudget() {
        var rng = SeededGenerator(seed: 0xB0D6E7)
        var gaveUp = 0, succeeded = 0
        for _ in 0..<3_000 {
            let a = (0..<rng.below(20)).map { _ in rng.below(6) }
            let b = (0..<rng.below(20)).map { _ in rng.below(6) }
            let budget = rng.below(16)
            let unique = a.filter { !b.contains($0) }.count + b.filter { !a.contains($0) }.count
            let sharedEdits = a.count + b.count - 2 * lcsLength(a, b) - unique
            let hunks = LineMerge.Diff.hunks(from: a, to: b, idCount: 6, editBudget: budget)
            #expect((hunks != nil) == (sharedEdits <= budget), "a=\(a) b=\(b) budget=\(budget)")
            guard let hunks else {
                gaveUp += 1
                continue
            }
            succeeded += 1
            let edits = hunks.reduce(0) { $0 + ($1.aEnd - $1.aStart) + ($1.bEnd - $1.bStart) }
            #expect(edits == a.count + b.count - 2 * lcsLength(a, b), "a=\(a) b=\(b)")
        }
        #expect(gaveUp > 100 && succeeded > 100)
    }

    /// 100,000 reversed lines (half a minute of diffing without the budget) give up.
    @Test func aHundredThousandReversedLinesGiveUp() {
        let block = numbered(100_000)
        #expect(
            LineMerge.outcome(
                ancestor: document(head: "h", block), local: document(head: "h", block.reversed()),
                remote: document(head: "H", block)) == .editBudgetExhausted)
    }
}

@Suite struct TextFallbackReportTests {
    private let entity = taskEntity(strategies: ["notes": .text])

    private func triple(blockSize: Int) -> (Record, Record, Record) {
        let block = numbered(blockSize)
        let base = record(entity, at: stamp(100), ["notes": .text(document(head: "h", block))])
        let local = base.with("notes", .text(document(head: "h", block.reversed())), at: stamp(200), in: entity)
        let remote = base.with("notes", .text(document(head: "H", block)), at: stamp(300, replicaR), in: entity)
        return (base, local, remote)
    }

    /// Over the budget the field is decided by the larger stamp, and the report says why.
    @Test func anExhaustedBudgetFallsBackToLastEditWinsAndSaysSo() throws {
        let (base, local, remote) = triple(blockSize: 1_002)
        let result = merge(entity, base, local, remote)
        #expect(result.merged.value("notes", in: entity) == remote.value("notes", in: entity))
        #expect(result.merged.stamp("notes", in: entity) == stamp(300, replicaR))
        let conflict = try #require(result.conflicts.first)
        #expect(conflict.field == "notes" && conflict.strategy == "text" && conflict.winner == .remote)
        #expect(conflict.fallback == .editBudgetExhausted)
        #expect(conflict.description.contains("editBudgetExhausted"))
        // The public strategy API gives the same value.
        let input = FieldMergeInput(
            entity: "tasks", id: 1, field: entity.fields[5], ancestor: base.values[5], ancestorStamp: base.stamps[5],
            local: local.values[5], localStamp: local.stamps[5], remote: remote.values[5], remoteStamp: remote.stamps[5])
        #expect(FieldStrategy.text.resolve(input) == remote.values[5])
    }

    @Test func aMergeWithinTheBudgetOrAnOverlapReportsNoFallback() throws {
        let (base, local, remote) = triple(blockSize: 1_001)
        let merged = try #require(merge(entity, base, local, remote).conflicts.first)
        #expect(merged.winner == .merged && merged.fallback == nil)
        let overlapping = base.with("notes", "other", at: stamp(300, replicaR), in: entity)
        let conflict = try #require(merge(entity, base, local, overlapping).conflicts.first)
        #expect(conflict.winner == .remote && conflict.fallback == nil)
        #expect(!conflict.description.contains("editBudgetExhausted"))
    }
}
