/// Which version a conflict's outcome came from.
public enum MergeWinner: String, Hashable, Sendable {
    /// This replica's version.
    case local
    /// The server's version.
    case remote
    /// A value neither side wrote: a counter sum, a set union, a text merge, a record rule.
    case merged
}

/// What kind of disagreement a ``FieldConflict`` reports.
public enum ConflictKind: String, Hashable, Sendable {
    /// Both sides changed one field to different values.
    case field
    /// One side deleted the record while the other edited it.
    case deleteVsEdit
    /// A record-level strategy changed the field-wise proposal.
    case recordRule
}

/// One reported conflict: where, the three versions, who decided and who won.
public struct FieldConflict: Hashable, Sendable, CustomStringConvertible {
    public var entity: String
    public var id: Int64
    public var kind: ConflictKind
    /// The field's name; nil for ``ConflictKind/deleteVsEdit``.
    public var field: String?
    /// The field's position; nil for ``ConflictKind/deleteVsEdit``.
    public var fieldIndex: Int?
    /// The ancestor's value, nil without an ancestor (and for record-level conflicts).
    public var ancestor: Value?
    public var ancestorStamp: Stamp?
    /// The local value; nil when the local side deleted the record.
    public var local: Value?
    /// The local stamp (the tombstone's stamp when the local side deleted the record).
    public var localStamp: Stamp
    /// The remote value; nil when the remote side deleted the record.
    public var remote: Value?
    public var remoteStamp: Stamp
    /// The strategy or delete policy that decided.
    public var strategy: String
    public var winner: MergeWinner
    /// The value kept; nil for ``ConflictKind/deleteVsEdit`` (see ``winner``).
    public var result: Value?
    /// For ``ConflictKind/deleteVsEdit``: the side that deleted the record (the other
    /// edited it); nil for field conflicts.
    public var deletedSide: MergeWinner? = nil
    /// Set when the strategy gave up and its fallback (`lastEditWins`) decided instead, such
    /// as a text merge over its edit budget; nil when the strategy's own rule decided.
    public var fallback: MergeFallback? = nil
    /// For ``ConflictKind/deleteVsEdit``: the edited side's record, every field's value and
    /// stamp (whichever side won), so that a history keeps the edit a delete beat; nil for
    /// field conflicts.
    public var edited: Record? = nil

    public var description: String {
        let place = field.map { "\(entity)#\(id).\($0)" } ?? "\(entity)#\(id)"
        if kind == .deleteVsEdit, let deletedSide {
            let (deleted, edited) = deletedSide == .local ? ("locally", "remotely") : ("remotely", "locally")
            return "deleteVsEdit conflict at \(place): deleted \(deleted), edited \(edited), \(strategy) -> \(winner.rawValue)"
        }
        return "\(kind.rawValue) conflict at \(place): local \(local.map(String.init(describing:)) ?? "deleted")"
            + " vs remote \(remote.map(String.init(describing:)) ?? "deleted"), \(strategy)"
            + (fallback.map { " (\($0.rawValue): lastEditWins)" } ?? "") + " -> \(winner.rawValue)"
    }
}

/// The outcome of merging one record.
public struct MergeResult: Hashable, Sendable {
    /// The merged record, with a stamp per field (and a tombstone if it ended deleted).
    public var merged: Record
    /// Fields whose merged value or stamp the server does not have yet: what to upload.
    /// Every field when the record must be re-created on the server.
    public var upload: FieldMask
    /// Fields whose merged value or stamp differs from the local row: what to write.
    /// Every field when a locally deleted record is restored.
    public var writeLocally: FieldMask
    /// The merged record is deleted and the server's is not: upload the delete.
    public var deletesRemotely: Bool
    /// The merged record is deleted and the local one is not: delete the local row.
    public var deletesLocally: Bool
    /// The merged record is alive and the server's is deleted: upload it as a re-creation.
    public var recreatesRemotely: Bool
    /// The merged record is alive and the local one is deleted: restore the local row.
    public var restoresLocally: Bool
    /// What both sides disagreed on, and how it was decided.
    public var conflicts: [FieldConflict]

    /// Whether anything must be sent to the server.
    public var needsUpload: Bool { !upload.isEmpty || deletesRemotely || recreatesRemotely }
    /// Whether anything must be written to the local store.
    public var needsLocalWrite: Bool { !writeLocally.isEmpty || deletesLocally || restoresLocally }
}

/// Inputs to a merge other than the three records.
public struct MergeContext: Sendable {
    /// The stamp given to values that neither side wrote (a counter sum, a set union, a
    /// text merge, a record rule's change). The sync layer passes a fresh stamp of the
    /// merging replica's clock. A computed value's stamp is never smaller than the
    /// successor of both sides' stamps, so it wins later last-edit comparisons.
    public var resolutionStamp: Stamp

    public init(resolutionStamp: Stamp = .none) {
        self.resolutionStamp = resolutionStamp
    }

    /// The stamp for a value computed from the two sides' stamps `l` and `r`.
    @inlinable
    public func computedStamp(_ l: Stamp, _ r: Stamp) -> Stamp {
        let newer = l > r ? l : r
        guard newer.clock < UInt64.max else {
            // The clock has stopped: no successor, and never a stamp older than a side's.
            return max(resolutionStamp, newer, Stamp(clock: .max, replica: resolutionStamp.replica))
        }
        let successor = Stamp(clock: newer.clock + 1, replica: resolutionStamp.replica)
        return resolutionStamp > successor ? resolutionStamp : successor
    }
}
