extension LineMerge {
    /// A maximal run of changes: ancestor lines `aStart..<aEnd` became `bStart..<bEnd`.
    ///
    /// Either range may be empty (a pure insertion or deletion), never both. Consecutive hunks
    /// of one diff are separated by at least one line common to both texts.
    struct Hunk: Equatable {
        var aStart: Int
        var aEnd: Int
        var bStart: Int
        var bEnd: Int
    }

    /// Line diffs over interned ids.
    enum Diff {
        /// Computes a shortest edit script from `a` to `b` as a list of hunks.
        ///
        /// Lines whose id never occurs in the other sequence cannot be part of any common
        /// subsequence, so they are marked changed up front and the Myers search runs only on
        /// the remaining lines; this keeps wholesale rewrites linear. Only the edits of those
        /// remaining lines (lines that occur in both texts but were moved, reordered or
        /// repeated differently) count against `editBudget`.
        ///
        /// - Parameters:
        ///   - a: Line ids of the old text.
        ///   - b: Line ids of the new text.
        ///   - idCount: An upper bound on every id in `a` and `b`.
        ///   - editBudget: The most insertions plus deletions of lines found in both texts
        ///     that the script may have.
        /// - Returns: Hunks sorted by position, separated by unchanged lines; nil when the
        ///   shortest edit script needs more than `editBudget` such edits.
        /// - Complexity: O((N + M) · min(D, editBudget)) time and O(N + M + idCount) memory.
        static func hunks(from a: [Int], to b: [Int], idCount: Int, editBudget: Int = .max) -> [Hunk]? {
            var inA = [Bool](repeating: false, count: idCount)
            var inB = [Bool](repeating: false, count: idCount)
            for id in a { inA[id] = true }
            for id in b { inB[id] = true }
            let keptA = a.indices.filter { inB[a[$0]] }
            let keptB = b.indices.filter { inA[b[$0]] }

            var myers = Myers(a: keptA.map { a[$0] }, b: keptB.map { b[$0] })
            guard myers.diff(editBudget: editBudget) else { return nil }
            var changedA = [Bool](repeating: true, count: a.count)
            var changedB = [Bool](repeating: true, count: b.count)
            for (k, i) in keptA.enumerated() { changedA[i] = myers.changedA[k] }
            for (k, j) in keptB.enumerated() { changedB[j] = myers.changedB[k] }

            var hunks: [Hunk] = []
            var i = 0
            var j = 0
            while i < a.count || j < b.count {
                if i < a.count, j < b.count, !changedA[i], !changedB[j] {
                    i += 1
                    j += 1
                    continue
                }
                let aStart = i
                let bStart = j
                while i < a.count, changedA[i] { i += 1 }
                while j < b.count, changedB[j] { j += 1 }
                if i == aStart, j == bStart {
                    // Unmatched unchanged lines cannot happen; stay total by ending in one hunk.
                    i = a.count
                    j = b.count
                }
                hunks.append(Hunk(aStart: aStart, aEnd: i, bStart: bStart, bEnd: j))
            }
            return hunks
        }
    }

    /// Myers' O(ND) difference algorithm in its linear-space, divide-and-conquer form.
    ///
    /// Each step trims the common prefix and suffix, finds a point on an optimal edit path by
    /// running the greedy search from both ends until the paths meet, and recurses on both
    /// halves. The result is recorded as one "changed" flag per line of each sequence; the
    /// unchanged lines form a longest common subsequence.
    struct Myers {
        let a: [Int]
        let b: [Int]
        /// Whether each line of `a` is deleted (not part of the common subsequence).
        private(set) var changedA: [Bool]
        /// Whether each line of `b` is inserted (not part of the common subsequence).
        private(set) var changedB: [Bool]

        init(a: [Int], b: [Int]) {
            self.a = a
            self.b = b
            changedA = [Bool](repeating: false, count: a.count)
            changedB = [Bool](repeating: false, count: b.count)
        }

        /// Diffs all of `a` against all of `b`, unless a shortest edit script needs more
        /// than `editBudget` insertions plus deletions.
        ///
        /// The first search for a middle snake finds the whole problem's edit distance D; it
        /// stops as soon as D is known to exceed the budget, and every later search works on
        /// a part of that path, so the whole diff costs O((N + M) · min(D, editBudget)).
        ///
        /// - Returns: False, with nothing marked, when the budget is exceeded.
        mutating func diff(editBudget: Int) -> Bool {
            let (aLow, aHigh, bLow, bHigh) = trimmed(0, a.count, 0, b.count)
            if aLow == aHigh || bLow == bHigh {
                guard (aHigh - aLow) + (bHigh - bLow) <= editBudget else { return false }
                markChanged(aLow, aHigh, bLow, bHigh)
                return true
            }
            switch split(aLow, aHigh, bLow, bHigh, editBudget: editBudget) {
            case .point(let x, let y):
                compare(aLow, x, bLow, y)
                compare(x, aHigh, y, bHigh)
            case .nothingInCommon:
                guard (aHigh - aLow) + (bHigh - bLow) <= editBudget else { return false }
                markChanged(aLow, aHigh, bLow, bHigh)
            case .overBudget:
                return false
            }
            return true
        }

        /// Diffs `a[aLow..<aHigh]` against `b[bLow..<bHigh]`, marking changed lines.
        ///
        /// - Complexity: O((N + M) · D) time; recursion depth O(log D) in practice.
        mutating func compare(_ aLow: Int, _ aHigh: Int, _ bLow: Int, _ bHigh: Int) {
            let (aLow, aHigh, bLow, bHigh) = trimmed(aLow, aHigh, bLow, bHigh)
            if aLow == aHigh || bLow == bHigh {
                markChanged(aLow, aHigh, bLow, bHigh)
                return
            }
            if case .point(let x, let y) = split(aLow, aHigh, bLow, bHigh, editBudget: .max) {
                compare(aLow, x, bLow, y)
                compare(x, aHigh, y, bHigh)
            } else {
                markChanged(aLow, aHigh, bLow, bHigh)
            }
        }

        /// The ranges without their common prefix and suffix.
        private func trimmed(_ aLow: Int, _ aHigh: Int, _ bLow: Int, _ bHigh: Int) -> (Int, Int, Int, Int) {
            var aLow = aLow, aHigh = aHigh, bLow = bLow, bHigh = bHigh
            while aLow < aHigh, bLow < bHigh, a[aLow] == b[bLow] {
                aLow += 1
                bLow += 1
            }
            while aLow < aHigh, bLow < bHigh, a[aHigh - 1] == b[bHigh - 1] {
                aHigh -= 1
                bHigh -= 1
            }
            return (aLow, aHigh, bLow, bHigh)
        }

        private mutating func markChanged(_ aLow: Int, _ aHigh: Int, _ bLow: Int, _ bHigh: Int) {
            for i in aLow..<aHigh { changedA[i] = true }
            for j in bLow..<bHigh { changedB[j] = true }
        }

        /// What the search for a middle snake found.
        enum Split {
            /// A point on a shortest edit path, strictly inside the problem.
            case point(Int, Int)
            /// The ranges share no line: every line is an edit.
            case nothingInCommon
            /// A shortest edit script has more than the budget's edits.
            case overBudget
        }

        /// Finds a point `(x, y)` on a shortest edit path through the given, non-empty ranges
        /// whose first and last lines differ.
        ///
        /// Round `d` of the search has seen every path of up to `2d` edits; a meeting in the
        /// forward half of round `d` is a path of `2d - 1` edits, in the backward half one of
        /// `2d`. So the search stops after round `(editBudget + 1) / 2`.
        ///
        /// - Returns: Absolute indices strictly inside the problem (so both halves shrink),
        ///   ``Split/nothingInCommon``, or ``Split/overBudget`` when the edit distance
        ///   exceeds `editBudget`.
        /// - Complexity: O((N + M) · min(D, editBudget)) time, O(N + M) memory.
        private func split(_ aLow: Int, _ aHigh: Int, _ bLow: Int, _ bHigh: Int, editBudget: Int) -> Split {
            let n = aHigh - aLow
            let m = bHigh - bLow
            let maxD = (n + m + 1) / 2
            // Rounds beyond the budget's last one would only find longer scripts.
            let lastRound = editBudget / 2 + editBudget % 2
            let rounds = lastRound < maxD ? lastRound + 1 : maxD
            let offset = maxD
            let size = 2 * maxD + 2
            var forward = [Int](repeating: -1, count: size)
            var backward = [Int](repeating: -1, count: size)
            forward[offset + 1] = 0
            backward[offset + 1] = 0
            let delta = n - m
            let odd = delta & 1 != 0
            // Diagonals that ran off the grid are skipped from then on.
            var forwardStart = 0, forwardEnd = 0, backwardStart = 0, backwardEnd = 0
            for d in 0..<rounds {
                var k = -d + forwardStart
                while k <= d - forwardEnd {
                    let slot = offset + k
                    var x = (k == -d || (k != d && forward[slot - 1] < forward[slot + 1]))
                        ? forward[slot + 1] : forward[slot - 1] + 1
                    var y = x - k
                    while x < n, y < m, a[aLow + x] == b[bLow + y] {
                        x += 1
                        y += 1
                    }
                    forward[slot] = x
                    if x > n {
                        forwardEnd += 2
                    } else if y > m {
                        forwardStart += 2
                    } else if odd {
                        let other = offset + delta - k
                        if other >= 0, other < size, backward[other] != -1, x >= n - backward[other] {
                            return 2 * d - 1 <= editBudget ? .point(aLow + x, bLow + y) : .overBudget
                        }
                    }
                    k += 2
                }
                k = -d + backwardStart
                while k <= d - backwardEnd {
                    let slot = offset + k
                    var x = (k == -d || (k != d && backward[slot - 1] < backward[slot + 1]))
                        ? backward[slot + 1] : backward[slot - 1] + 1
                    var y = x - k
                    while x < n, y < m, a[aHigh - 1 - x] == b[bHigh - 1 - y] {
                        x += 1
                        y += 1
                    }
                    backward[slot] = x
                    if x > n {
                        backwardEnd += 2
                    } else if y > m {
                        backwardStart += 2
                    } else if !odd {
                        let other = offset + delta - k
                        if other >= 0, other < size, forward[other] != -1 {
                            let forwardX = forward[other]
                            if forwardX >= n - x {
                                guard 2 * d <= editBudget else { return .overBudget }
                                return .point(aLow + forwardX, bLow + forwardX - (other - offset))
                            }
                        }
                    }
                    k += 2
                }
            }
            return rounds < maxD ? .overBudget : .nothingInCommon
        }
    }
}
