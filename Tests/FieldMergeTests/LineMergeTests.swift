@testable import FieldMerge
import Testing

/// Joins lines, each terminated by "\n" (the usual shape of a text file).
private func lines(_ items: String...) -> String {
    items.map { $0 + "\n" }.joined()
}

/// Byte-exact comparison helper (String `==` uses canonical equivalence).
private func bytes(_ text: String?) -> [UInt8]? {
    text.map { Array($0.utf8) }
}

/// One replacement of ancestor segments `start..<end` by `replacement`.
private struct Edit {
    var start: Int
    var end: Int
    var replacement: [String]
    var isLocal: Bool
}

/// Applies sorted, non-overlapping edits to a segment list.
private func apply(_ edits: [Edit], to segments: [String]) -> [String] {
    var result: [String] = []
    var position = 0
    for edit in edits {
        result += segments[position..<edit.start]
        result += edit.replacement
        position = edit.end
    }
    result += segments[position...]
    return result
}

/// Random edits over `0..<count` segments, each pair separated by at least one untouched line.
private func randomEdits(
    count: Int, rng: inout SeededGenerator, newLine: (inout SeededGenerator) -> String
) -> [Edit] {
    var edits: [Edit] = []
    var position = 0
    while true {
        let start = position + rng.below(5)
        if start > count { break }
        let length = min(rng.below(3), count - start)
        var added = rng.below(3)
        if length == 0 && added == 0 { added = 1 }
        let replacement = (0..<added).map { _ in newLine(&rng) }
        edits.append(Edit(start: start, end: start + length, replacement: replacement, isLocal: rng.below(2) == 0))
        position = start + length + 1
    }
    return edits
}

/// A random ancestor of unique segments, sometimes ending in a newline (empty last segment).
private func uniqueAncestor(_ rng: inout SeededGenerator) -> [String] {
    let flavours = ["a", "é", "日本", "cr\r", "🙂"]
    var segments = (0..<(1 + rng.below(20))).map { "\(flavours[rng.below(flavours.count)])\($0)" }
    if rng.below(2) == 0 { segments.append("") }
    return segments
}

@Suite struct LineMergeTests {
    @Test func identicalSidesReturnThatSideByteForByte() {
        for text in ["", "\n", "\n\n", "a", "a\n", "a\nb", "a\r\nb\r\n", "x\n\ny"] {
            #expect(bytes(LineMerge.merge(ancestor: text, local: text, remote: text)) == bytes(text))
        }
        let changed = lines("one", "TWO", "three")
        #expect(LineMerge.merge(ancestor: lines("one", "two", "three"), local: changed, remote: changed) == changed)
    }

    @Test func onlyLocalChangedTakesLocal() {
        let ancestor = lines("a", "b", "c")
        let local = lines("a", "B", "c", "d")
        #expect(LineMerge.merge(ancestor: ancestor, local: local, remote: ancestor) == local)
    }

    @Test func onlyRemoteChangedTakesRemote() {
        let ancestor = lines("a", "b", "c")
        let remote = lines("b", "c")
        #expect(LineMerge.merge(ancestor: ancestor, local: ancestor, remote: remote) == remote)
    }

    @Test func bothChangeDistantLinesKeepsBothInOrder() {
        let ancestor = lines("1", "2", "3", "4", "5", "6")
        let local = lines("1", "TWO", "3", "4", "5", "6")
        let remote = lines("1", "2", "3", "4", "FIVE", "6")
        #expect(LineMerge.merge(ancestor: ancestor, local: local, remote: remote) == lines("1", "TWO", "3", "4", "FIVE", "6"))
        #expect(LineMerge.merge(ancestor: ancestor, local: remote, remote: local) == lines("1", "TWO", "3", "4", "FIVE", "6"))
    }

    @Test func sameLineChangedDifferentlyConflicts() {
        let ancestor = lines("a", "b", "c")
        #expect(LineMerge.merge(ancestor: ancestor, local: lines("a", "X", "c"), remote: lines("a", "Y", "c")) == nil)
    }

    @Test func identicalChangeOnBothSidesIsTakenOnce() {
        let ancestor = lines("a", "b", "c", "d", "e")
        let local = lines("a", "B", "c", "d", "E")
        let remote = lines("a", "B", "c", "d", "e")
        #expect(LineMerge.merge(ancestor: ancestor, local: local, remote: remote) == lines("a", "B", "c", "d", "E"))
    }

    @Test func insertionsAtStartAndEndFromEitherSide() {
        let ancestor = lines("a", "b", "c")
        let atStart = lines("0", "a", "b", "c")
        let atEnd = lines("a", "b", "c", "9")
        #expect(LineMerge.merge(ancestor: ancestor, local: atStart, remote: atEnd) == lines("0", "a", "b", "c", "9"))
        #expect(LineMerge.merge(ancestor: ancestor, local: atEnd, remote: atStart) == lines("0", "a", "b", "c", "9"))
    }

    @Test func deletionsOnOneSideWithEditElsewhereOnOther() {
        let ancestor = lines("a", "b", "c", "d", "e", "f")
        let local = lines("a", "d", "e", "f")  // deletes b, c
        let remote = lines("a", "b", "c", "d", "e", "F")
        #expect(LineMerge.merge(ancestor: ancestor, local: local, remote: remote) == lines("a", "d", "e", "F"))
        #expect(LineMerge.merge(ancestor: ancestor, local: remote, remote: local) == lines("a", "d", "e", "F"))
    }

    @Test func bothInsertAtSameSpotDifferentlyConflicts() {
        let ancestor = lines("a", "b")
        #expect(LineMerge.merge(ancestor: ancestor, local: lines("a", "x", "b"), remote: lines("a", "y", "b")) == nil)
    }

    @Test func bothInsertSameLinesAtSameSpotWithOtherEditKeepsOneCopy() {
        let ancestor = lines("a", "b", "c", "d")
        let local = lines("a", "x", "b", "c", "D")
        let remote = lines("a", "x", "b", "c", "d")
        #expect(LineMerge.merge(ancestor: ancestor, local: local, remote: remote) == lines("a", "x", "b", "c", "D"))
    }

    @Test func adjacentLineEditsConflictLikeGNUDiff3() {
        let ancestor = lines("a", "b", "c", "d")
        // Consecutive lines changed by different sides.
        #expect(LineMerge.merge(ancestor: ancestor, local: lines("a", "B", "c", "d"), remote: lines("a", "b", "C", "d")) == nil)
        // An insertion right after a line the other side changed.
        #expect(LineMerge.merge(ancestor: ancestor, local: lines("a", "B", "c", "d"), remote: lines("a", "b", "new", "c", "d")) == nil)
        // One untouched line in between is enough to merge.
        #expect(LineMerge.merge(ancestor: ancestor, local: lines("A", "b", "c", "d"), remote: lines("a", "b", "C", "d")) == lines("A", "b", "C", "d"))
    }

    @Test func missingTrailingNewlineIsPreserved() {
        let ancestor = "a\nb\nc"
        #expect(LineMerge.merge(ancestor: ancestor, local: "A\nb\nc", remote: "a\nb\nC") == "A\nb\nC")
        // Adding the final newline is itself a change that merges with a distant edit.
        #expect(LineMerge.merge(ancestor: ancestor, local: "a\nb\nc\n", remote: "x\nb\nc") == "x\nb\nc\n")
        // Removing it on one side, editing the first line on the other.
        #expect(LineMerge.merge(ancestor: "a\nb\nc\n", local: "a\nb\nc", remote: "x\nb\nc\n") == "x\nb\nc")
    }

    @Test func emptyAncestorWithBothSidesAddingDifferentTextConflicts() {
        #expect(LineMerge.merge(ancestor: "", local: "x\n", remote: "y\n") == nil)
        #expect(LineMerge.merge(ancestor: "", local: "x", remote: "y") == nil)
    }

    @Test func emptyAncestorWithOneSideAddingTakesThatSide() {
        #expect(LineMerge.merge(ancestor: "", local: "x\ny\n", remote: "") == "x\ny\n")
        #expect(LineMerge.merge(ancestor: "", local: "", remote: "\n") == "\n")
    }

    @Test func unicodeLinesMergeAndStayByteExact() {
        let ancestor = lines("héllo", "日本語", "🙂👍🏽", "Ωmega")
        let local = lines("héllo wörld", "日本語", "🙂👍🏽", "Ωmega")
        let remote = lines("héllo", "日本語", "🙂👍🏽", "Ωmega ✓")
        #expect(LineMerge.merge(ancestor: ancestor, local: local, remote: remote) == lines("héllo wörld", "日本語", "🙂👍🏽", "Ωmega ✓"))
        // Canonically equivalent but byte-different lines count as a change.
        let decomposed = "cafe\u{301}\nx\ny\n"
        let precomposed = "caf\u{E9}\nx\ny\n"
        let merged = LineMerge.merge(ancestor: decomposed, local: precomposed, remote: "cafe\u{301}\nx\nY\n")
        #expect(bytes(merged) == bytes("caf\u{E9}\nx\nY\n"))
    }

    @Test func carriageReturnsAreOrdinaryLineContent() {
        let ancestor = "a\r\nb\r\nc\r\n"
        #expect(LineMerge.merge(ancestor: ancestor, local: "A\r\nb\r\nc\r\n", remote: "a\r\nb\r\nC\r\n") == "A\r\nb\r\nC\r\n")
        // Changing only a line ending conflicts with a different edit of that line.
        #expect(LineMerge.merge(ancestor: ancestor, local: "a\nb\r\nc\r\n", remote: "X\r\nb\r\nc\r\n") == nil)
    }

    @Test func randomDisjointEditsAreBothApplied() {
        var rng = SeededGenerator(seed: 0xD1FF3)
        var counter = 0
        var bothSides = 0
        for _ in 0..<3000 {
            let ancestor = uniqueAncestor(&rng)
            let edits = randomEdits(count: ancestor.count, rng: &rng) { _ in
                counter += 1
                return "n\(counter)"
            }
            let local = apply(edits.filter(\.isLocal), to: ancestor)
            let remote = apply(edits.filter { !$0.isLocal }, to: ancestor)
            let expected = apply(edits, to: ancestor).joined(separator: "\n")
            if edits.contains(where: \.isLocal) && edits.contains(where: { !$0.isLocal }) { bothSides += 1 }
            let a = ancestor.joined(separator: "\n")
            let l = local.joined(separator: "\n")
            let r = remote.joined(separator: "\n")
            #expect(bytes(LineMerge.merge(ancestor: a, local: l, remote: r)) == bytes(expected), "A=\(a.debugDescription) L=\(l.debugDescription) R=\(r.debugDescription)")
        }
        #expect(bothSides > 1000)
    }

    @Test(arguments: [false, true])
    func randomTriplesSatisfyIdentitiesAndSymmetry(repetitiveLines: Bool) {
        var rng = SeededGenerator(seed: repetitiveLines ? 42 : 7)
        let pool = ["x", "y", "z", "", "x\r", "ü"]
        var counter = 0
        var cleanMerges = 0
        func newLine(_ rng: inout SeededGenerator) -> String {
            counter += 1
            return repetitiveLines ? pool[rng.below(pool.count)] : "n\(counter)"
        }
        for _ in 0..<3000 {
            let ancestorLines = repetitiveLines
                ? (0..<(1 + rng.below(15))).map { _ in pool[rng.below(pool.count)] } : uniqueAncestor(&rng)
            let a = ancestorLines.joined(separator: "\n")
            let l = apply(randomEdits(count: ancestorLines.count, rng: &rng, newLine: newLine), to: ancestorLines)
                .joined(separator: "\n")
            let r = apply(randomEdits(count: ancestorLines.count, rng: &rng, newLine: newLine), to: ancestorLines)
                .joined(separator: "\n")
            #expect(bytes(LineMerge.merge(ancestor: a, local: l, remote: l)) == bytes(l))
            #expect(bytes(LineMerge.merge(ancestor: a, local: a, remote: r)) == bytes(r))
            #expect(bytes(LineMerge.merge(ancestor: a, local: l, remote: a)) == bytes(l))
            let forward = LineMerge.merge(ancestor: a, local: l, remote: r)
            let backward = LineMerge.merge(ancestor: a, local: r, remote: l)
            #expect(bytes(forward) == bytes(backward), "A=\(a.debugDescription) L=\(l.debugDescription) R=\(r.debugDescription)")
            if forward != nil { cleanMerges += 1 }
        }
        #expect(cleanMerges > 100)
    }

    @Test func myersDiffIsAMinimalEditScript() {
        var rng = SeededGenerator(seed: 0x0DD)
        for _ in 0..<2000 {
            let a = (0..<rng.below(25)).map { _ in rng.below(4) }
            let b = (0..<rng.below(25)).map { _ in rng.below(4) }
            // Longest common subsequence length by dynamic programming.
            var table = [[Int]](repeating: [Int](repeating: 0, count: b.count + 1), count: a.count + 1)
            for i in a.indices.reversed() {
                for j in b.indices.reversed() {
                    table[i][j] = a[i] == b[j] ? table[i + 1][j + 1] + 1 : max(table[i + 1][j], table[i][j + 1])
                }
            }
            guard let hunks = LineMerge.Diff.hunks(from: a, to: b, idCount: 4) else {
                Issue.record("an unlimited diff gave up: a=\(a) b=\(b)")
                continue
            }
            let deleted = hunks.reduce(0) { $0 + $1.aEnd - $1.aStart }
            let inserted = hunks.reduce(0) { $0 + $1.bEnd - $1.bStart }
            #expect(a.count - deleted == table[0][0] && b.count - inserted == table[0][0], "a=\(a) b=\(b)")
            // Rebuilding b from a and the hunks must reproduce b exactly.
            var rebuilt: [Int] = []
            var position = 0
            for hunk in hunks {
                rebuilt += a[position..<hunk.aStart]
                rebuilt += b[hunk.bStart..<hunk.bEnd]
                position = hunk.aEnd
            }
            rebuilt += a[position...]
            #expect(rebuilt == b, "a=\(a) b=\(b)")
        }
    }

    @Test func tenThousandLineTextsMergeCorrectly() {
        let ancestor = (0..<10_000).map { "line \($0)" }
        var local = ancestor
        var remote = ancestor
        var expected = ancestor
        for i in stride(from: 10, to: 10_000, by: 100) {
            local[i] = "local \(i)"
            expected[i] = "local \(i)"
        }
        for i in stride(from: 3, to: 10_000, by: 7) where !(9...11).contains(i % 100) && !(59...61).contains(i % 100) {
            remote[i] = "remote \(i)"
            expected[i] = "remote \(i)"
        }
        let deleted = Set(stride(from: 60, to: 10_000, by: 100))
        local = local.enumerated().filter { !deleted.contains($0.offset) }.map(\.element)
        expected = expected.enumerated().filter { !deleted.contains($0.offset) }.map(\.element)
        let merged = LineMerge.merge(
            ancestor: ancestor.joined(separator: "\n"),
            local: (["header"] + local).joined(separator: "\n"),
            remote: (remote + ["footer"]).joined(separator: "\n"))
        #expect(merged == (["header"] + expected + ["footer"]).joined(separator: "\n"))
        // A wholesale rewrite on both sides is one big conflict, found quickly.
        let rewrite = { (tag: String) in (0..<10_000).map { "\(tag) \($0)" }.joined(separator: "\n") }
        #expect(LineMerge.merge(ancestor: ancestor.joined(separator: "\n"), local: rewrite("L"), remote: rewrite("R")) == nil)
    }
}
