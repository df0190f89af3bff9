import FieldMergeServer

extension RevisionServer.Options {
    /// Enforces `policy` whole, in one call that cannot forget a part: its write rules
    /// (`authorize`), its read rules
    /// (`readable`, nil when everyone reads everything) and its
    /// scopes (`scopes`). What `fieldmerge serve --policy` does;
    /// whatever these three held before is replaced.
    public mutating func enforce(_ policy: AccessPolicy) {
        authorize = policy.authorization
        readable = policy.readFilter
        scopes = policy.scopes
    }
}
