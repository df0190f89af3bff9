import FieldMerge

/// What one write group keeps of its own while other groups of the same server run beside it
/// (``ServerStorage/concurrentWrites`` above 1): the clock its stamps come from, the revision it
/// has reached and the attachments its request lacks. Found through a task-local, so that the
/// server's code reads ``RevisionServer/clock`` and the rest as when writes run one at a time.
final class WriteContext: @unchecked Sendable {
    // Touched only on the server's executor, by the group's task.
    var clock: HybridClock
    var maxRevision: Int64
    var missingAttachments: Set<String> = []

    init(clock: HybridClock, maxRevision: Int64) {
        self.clock = clock
        self.maxRevision = maxRevision
    }

    @TaskLocal static var current: WriteContext?
}
