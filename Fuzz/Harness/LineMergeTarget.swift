import FieldMerge

/// The first byte picks the edit budget (the default, or a small one that is exhausted
/// often); the rest is ancestor, local and remote separated by NUL bytes (invalid UTF-8 is
/// repaired as `String(decoding:)` does). The merge ends within its budget, is symmetric in
/// local and remote (as documented), and a side equal to the ancestor yields the other side.
func fuzzLineMerge(_ bytes: UnsafeRawBufferPointer) {
    guard let control = bytes.first else { return }
    let budget = control & 1 == 0 ? LineMerge.editBudget : Int(control >> 1) % 16
    var parts = bytes.dropFirst().split(separator: 0, maxSplits: 2, omittingEmptySubsequences: false)
        .map { String(decoding: $0, as: UTF8.self) }
    while parts.count < 3 { parts.append("") }
    let (ancestor, local, remote) = (parts[0], parts[1], parts[2])

    let outcome = LineMerge.outcome(ancestor: ancestor, local: local, remote: remote, editBudget: budget)
    let mirrored = LineMerge.outcome(ancestor: ancestor, local: remote, remote: local, editBudget: budget)
    require(outcome == mirrored, "line merge is not symmetric: \(outcome) vs \(mirrored)")
    // Byte for byte, as the merge compares (String's == is canonical equivalence).
    if local.utf8.elementsEqual(ancestor.utf8) { require(outcome == .merged(remote), "an unchanged local side did not yield the remote") }
    if remote.utf8.elementsEqual(ancestor.utf8) { require(outcome == .merged(local), "an unchanged remote side did not yield the local") }
}
