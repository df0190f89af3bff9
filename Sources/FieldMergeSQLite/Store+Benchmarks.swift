import FieldMerge

extension Store {
    /// Takes `records` as the server's versions at `revision` (each its own ancestor, nothing
    /// pending) in one transaction, as a page of catch-up without local edits is written, and
    /// sets `maxRevision` to `revision`.
    ///
    /// For the nested `Benchmarks/` package, which cannot see the `package` declarations the
    /// sync client applies responses with. Not an app's API: it bypasses the merge.
    @_spi(Benchmarks) public func applyServerVersions(_ records: [Record], revision: Int64) throws(StoreError) {
        try apply(ServerChanges(records: records.map { AcknowledgedRecord($0, revision: revision) }, maxRevision: revision))
    }
}
