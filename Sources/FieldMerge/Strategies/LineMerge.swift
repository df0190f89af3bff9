/// Line-based three-way merge (diff3).
///
/// `LineMerge` reconciles two descendants of a common ancestor the way GNU `diff3 -m` does,
/// except that instead of writing conflict markers it reports a conflict by returning `nil`.
///
/// **Lines.** Text is split on the line feed byte (`"\n"`, U+000A) and nothing else. A text is
/// the sequence of segments between line feeds: `"a\nb"` is `["a", "b"]`, `"a\nb\n"` is
/// `["a", "b", ""]`, `""` is `[""]` and `"\n"` is `["", ""]`. Joining segments with `"\n"`
/// reproduces the input byte for byte, so whether a text ends in a newline is carried by its
/// final (possibly empty) segment, which takes part in the merge like any other line. A carriage
/// return is an ordinary character, so `"\r\n"` endings survive unchanged, and changing only the
/// ending of a line is a change to that line. Lines are compared byte for byte on their UTF-8
/// encoding, without Unicode normalization.
///
/// **Merging.** The diffs ancestor→local and ancestor→remote are computed with Myers' O(ND)
/// algorithm. Change hunks from both diffs whose ancestor ranges overlap *or touch* form one
/// unstable chunk; everything between chunks is unchanged on both sides and copied from the
/// ancestor. A chunk changed by one side only takes that side's lines; a chunk changed by both
/// sides is accepted only when both produce exactly the same lines, otherwise it is a conflict.
///
/// **Adjacent edits.** Following GNU diff3, edits that touch without overlapping (changes to two
/// consecutive lines, or an insertion directly before or after a line the other side changed or
/// deleted) fall into the same chunk and therefore conflict unless both sides agree on the whole
/// chunk. Edits separated by at least one line unchanged on both sides always merge cleanly. Two
/// insertions at the same position conflict unless they insert the same lines.
///
/// **Bounded work.** Lines found in only one of two texts are changes in any case and cost the
/// diff nothing. Each diff may make at most ``editBudget`` insertions and deletions of lines
/// found in both texts (moved, reordered or differently repeated lines); beyond that the merge
/// gives up with ``Outcome/editBudgetExhausted``. So no input costs more than
/// O((N + M) · editBudget) time: a side that reverses 100,000 lines gives up after a few
/// milliseconds instead of computing a diff for half a minute.
public enum LineMerge {
    /// The most insertions plus deletions of lines found in both texts that each diff
    /// (ancestor→local, ancestor→remote) may need (`Specs/merge-semantics.md`, section 6).
    public static let editBudget = 2_000

    /// How a line merge ended.
    public enum Outcome: Hashable, Sendable {
        /// Both sides' changes, combined.
        case merged(String)
        /// The sides changed overlapping or adjacent lines differently.
        case conflict
        /// A diff needed more than the edit budget; nothing was merged.
        case editBudgetExhausted
    }

    /// Merges `local` and `remote`, both derived from `ancestor`, line by line.
    ///
    /// - Returns: The merged text, or nil on a conflict or when a diff exceeds ``editBudget``
    ///   (``outcome(ancestor:local:remote:editBudget:)`` tells these apart).
    public static func merge(ancestor: String, local: String, remote: String) -> String? {
        if case .merged(let text) = outcome(ancestor: ancestor, local: local, remote: remote) { return text }
        return nil
    }

    /// Merges `local` and `remote`, both derived from `ancestor`, line by line, within a budget.
    ///
    /// Byte-identical sides return that side; a side byte-identical to the ancestor yields the
    /// other side unchanged. Otherwise the result keeps every change either side made, provided
    /// no two changes overlap or touch in the ancestor (see ``LineMerge`` for the exact rules).
    /// The result is deterministic and symmetric: swapping `local` and `remote` gives the same
    /// answer.
    ///
    /// - Parameters:
    ///   - ancestor: The common base version both sides were derived from.
    ///   - local: The local descendant of `ancestor`.
    ///   - remote: The remote descendant of `ancestor`.
    ///   - editBudget: The most edits of lines found in both texts that each diff may need.
    /// - Returns: The merged text; ``Outcome/conflict`` when the two sides changed overlapping
    ///   or adjacent regions of the ancestor differently (a true conflict the caller resolves
    ///   otherwise); ``Outcome/editBudgetExhausted`` when a diff needs more than `editBudget`.
    /// - Complexity: O((N + M) · min(D, editBudget)) time and O(N + M) memory, where N and M
    ///   are line counts and D is the larger edit distance between the ancestor and either side.
    public static func outcome(
        ancestor: String, local: String, remote: String, editBudget: Int = LineMerge.editBudget
    ) -> Outcome {
        if local.utf8.elementsEqual(remote.utf8) { return .merged(local) }
        if local.utf8.elementsEqual(ancestor.utf8) { return .merged(remote) }
        if remote.utf8.elementsEqual(ancestor.utf8) { return .merged(local) }

        var interner = LineInterner()
        let base = interner.split(ancestor)
        let mine = interner.split(local)
        let theirs = interner.split(remote)
        guard
            let localHunks = Diff.hunks(from: base.ids, to: mine.ids, idCount: interner.count, editBudget: editBudget),
            let remoteHunks = Diff.hunks(from: base.ids, to: theirs.ids, idCount: interner.count, editBudget: editBudget)
        else { return .editBudgetExhausted }
        guard
            let bytes = combine(
                base: base, local: mine, remote: theirs,
                localHunks: localHunks, remoteHunks: remoteHunks)
        else { return .conflict }
        return .merged(String(decoding: bytes, as: UTF8.self))
    }
}

extension LineMerge {
    /// A text split into lines, each also known by an interned integer id.
    struct SplitText {
        /// The UTF-8 encoding of the whole text.
        let bytes: [UInt8]
        /// The byte range of each line, excluding the separating line feeds.
        let lines: [Range<Int>]
        /// The interned id of each line; equal ids mean byte-identical lines.
        let ids: [Int]
    }

    /// Assigns dense integer ids to distinct lines so diffs compare lines in O(1).
    struct LineInterner {
        private var table: [ArraySlice<UInt8>: Int] = [:]

        /// The number of distinct lines seen so far; every id is below this.
        var count: Int { table.count }

        /// Splits `text` on line feeds and interns every line.
        ///
        /// - Parameter text: The text to split.
        /// - Returns: The lines of `text`; there is always at least one (possibly empty) line.
        /// - Complexity: O(n) expected, where n is the UTF-8 length of `text`.
        mutating func split(_ text: String) -> SplitText {
            let bytes = Array(text.utf8)
            var lines: [Range<Int>] = []
            var ids: [Int] = []
            var start = 0
            for end in 0...bytes.count where end == bytes.count || bytes[end] == 0x0A {
                lines.append(start..<end)
                ids.append(intern(bytes[start..<end]))
                start = end + 1
            }
            return SplitText(bytes: bytes, lines: lines, ids: ids)
        }

        private mutating func intern(_ line: ArraySlice<UInt8>) -> Int {
            if let id = table[line] { return id }
            let id = table.count
            table[line] = id
            return id
        }
    }

    /// Accumulates output lines, re-inserting the line feeds between them.
    struct Output {
        private(set) var bytes: [UInt8] = []
        private var hasLine = false

        /// Appends the lines `range` of `text`.
        mutating func append(_ range: Range<Int>, of text: SplitText) {
            for line in range {
                if hasLine { bytes.append(0x0A) }
                bytes.append(contentsOf: text.bytes[text.lines[line]])
                hasLine = true
            }
        }
    }

    /// Walks both hunk lists in ancestor order and builds the merged text.
    ///
    /// Hunks whose ancestor ranges overlap or touch (the next one starts at or before the end
    /// of the chunk built so far) are grouped into one chunk. The grouping is the least fixpoint
    /// of that rule, so it does not depend on which side is called local.
    ///
    /// - Parameters:
    ///   - base: The split ancestor.
    ///   - local: The split local side.
    ///   - remote: The split remote side.
    ///   - localHunks: Hunks of ancestor→local, sorted and separated by unchanged lines.
    ///   - remoteHunks: Hunks of ancestor→remote, sorted and separated by unchanged lines.
    /// - Returns: The merged bytes, or nil on a conflicting chunk.
    /// - Complexity: O(N + M) for the walk plus the size of the output.
    static func combine(
        base: SplitText, local: SplitText, remote: SplitText,
        localHunks: [Hunk], remoteHunks: [Hunk]
    ) -> [UInt8]? {
        var output = Output()
        var li = 0
        var ri = 0
        var basePosition = 0
        while li < localHunks.count || ri < remoteHunks.count {
            var low = Int.max
            if li < localHunks.count { low = localHunks[li].aStart }
            if ri < remoteHunks.count { low = min(low, remoteHunks[ri].aStart) }
            var high = low
            let firstLocal = li
            let firstRemote = ri
            while true {
                if li < localHunks.count, localHunks[li].aStart <= high {
                    high = max(high, localHunks[li].aEnd)
                    li += 1
                } else if ri < remoteHunks.count, remoteHunks[ri].aStart <= high {
                    high = max(high, remoteHunks[ri].aEnd)
                    ri += 1
                } else {
                    break
                }
            }
            output.append(basePosition..<low, of: base)
            let localRange = sideRange(localHunks[firstLocal..<li], low: low, high: high)
            let remoteRange = sideRange(remoteHunks[firstRemote..<ri], low: low, high: high)
            switch (localRange, remoteRange) {
            case (let l?, nil):
                output.append(l, of: local)
            case (nil, let r?):
                output.append(r, of: remote)
            case (let l?, let r?):
                guard local.ids[l].elementsEqual(remote.ids[r]) else { return nil }
                output.append(l, of: local)
            case (nil, nil):
                break  // Unreachable: every chunk contains at least one hunk.
            }
            basePosition = high
        }
        output.append(basePosition..<base.lines.count, of: base)
        return output.bytes
    }

    /// The lines of one side that correspond to the ancestor chunk `low..<high`.
    ///
    /// Ancestor lines of the chunk outside the side's own hunks are unchanged on that side, so
    /// the range is the side's hunks widened by those unchanged lines at either end.
    ///
    /// - Returns: The side's line range, or nil if the side has no hunk in the chunk.
    private static func sideRange(_ hunks: ArraySlice<Hunk>, low: Int, high: Int) -> Range<Int>? {
        guard let first = hunks.first, let last = hunks.last else { return nil }
        return (first.bStart - (first.aStart - low))..<(last.bEnd + (high - last.aEnd))
    }
}
