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
        /// the remaining lines; this keeps wholesale rewrites linear.
        ///
        /// - Parameters:
        ///   - a: Line ids of the old text.
        ///   - b: Line ids of the new text.
        ///   - idCount: An upper bound on every id in `a` and `b`.
        /// - Returns: Hunks sorted by position, separated by unchanged lines.
        /// - Complexity: O((N + M) · D) time and O(N + M + idCount) memory.
        static func hunks(from a: [Int], to b: [Int], idCount: Int) -> [Hunk] {
            var inA = [Bool](repeating: false, count: idCount)
            var inB = [Bool](repeating: false, count: idCount)
            for id in a { inA[id] = true }
            for id in b { inB[id] = true }
            let keptA = a.indices.filter { inB[a[$0]] }
            let keptB = b.indices.filter { inA[b[$0]] }

            var myers = Myers(a: keptA.map { a[$0] }, b: keptB.map { b[$0] })
            myers.compare(0, keptA.count, 0, keptB.count)
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

        /// Diffs `a[aLow..<aHigh]` against `b[bLow..<bHigh]`, marking changed lines.
        ///
        /// - Complexity: O((N + M) · D) time; recursion depth O(log D) in practice.
        mutating func compare(_ aLow: Int, _ aHigh: Int, _ bLow: Int, _ bHigh: Int) {
            var aLow = aLow, aHigh = aHigh, bLow = bLow, bHigh = bHigh
            while aLow < aHigh, bLow < bHigh, a[aLow] == b[bLow] {
                aLow += 1
                bLow += 1
            }
            while aLow < aHigh, bLow < bHigh, a[aHigh - 1] == b[bHigh - 1] {
                aHigh -= 1
                bHigh -= 1
            }
            if aLow == aHigh || bLow == bHigh {
                for i in aLow..<aHigh { changedA[i] = true }
                for j in bLow..<bHigh { changedB[j] = true }
                return
            }
            if let (x, y) = split(aLow, aHigh, bLow, bHigh) {
                compare(aLow, x, bLow, y)
                compare(x, aHigh, y, bHigh)
            } else {
                for i in aLow..<aHigh { changedA[i] = true }
                for j in bLow..<bHigh { changedB[j] = true }
            }
        }

        /// Finds a point `(x, y)` on a shortest edit path through the given, non-empty ranges
        /// whose first and last lines differ.
        ///
        /// - Returns: Absolute indices strictly inside the problem (so both halves shrink), or
        ///   nil if the ranges have nothing in common.
        /// - Complexity: O((N + M) · D) time, O(N + M) memory.
        private func split(_ aLow: Int, _ aHigh: Int, _ bLow: Int, _ bHigh: Int) -> (Int, Int)? {
            let n = aHigh - aLow
            let m = bHigh - bLow
            let maxD = (n + m + 1) / 2
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
            for d in 0..<maxD {
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
                            return (aLow + x, bLow + y)
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
                                return (aLow + forwardX, bLow + forwardX - (other - offset))
                            }
                        }
                    }
                    k += 2
                }
            }
            return nil
        }
    }
}
