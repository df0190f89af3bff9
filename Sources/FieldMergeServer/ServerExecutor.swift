import FieldMerge

/// An executor a ``RevisionServer`` runs on (``ServerStorage/executor``): serial, and able to
/// tell whether the caller runs on it.
public protocol ServerExecutor: SerialExecutor {
    /// Whether the caller runs on this executor (tests check that storage calls do).
    var isCurrent: Bool { get }
}

extension SerialQueueExecutor: ServerExecutor {}
