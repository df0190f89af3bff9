extension FieldConflict {
    /// A conflict as a merge reports it (for stores that keep a history of them, and tests).
    public init(
        at entity: String, id: Int64, kind: ConflictKind, field: String?, fieldIndex: Int?, ancestor: Value?,
        ancestorStamp: Stamp?, local: Value?, localStamp: Stamp, remote: Value?, remoteStamp: Stamp,
        strategy: String, winner: MergeWinner, result: Value?, deletedSide: MergeWinner? = nil,
        fallback: MergeFallback? = nil, edited: Record? = nil
    ) {
        self.entity = entity
        self.id = id
        self.kind = kind
        self.field = field
        self.fieldIndex = fieldIndex
        self.ancestor = ancestor
        self.ancestorStamp = ancestorStamp
        self.local = local
        self.localStamp = localStamp
        self.remote = remote
        self.remoteStamp = remoteStamp
        self.strategy = strategy
        self.winner = winner
        self.result = result
        self.deletedSide = deletedSide
        self.fallback = fallback
        self.edited = edited
    }
}
