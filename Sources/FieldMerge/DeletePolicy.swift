/// How an entity resolves a delete on one side against a concurrent edit on the other.
public enum DeletePolicy: String, Hashable, Sendable, CaseIterable {
    /// The record stays deleted; the edit is reported as a conflict and dropped.
    case deleteWins
    /// The edit resurrects the record; the delete is reported as a conflict and dropped.
    case editWins
    /// The tombstone's stamp against the largest stamp among the edited fields.
    case lastEditWins
}
