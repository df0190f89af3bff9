import FieldMerge

/// The team's workflow: a task moves todo → doing → review → done.
enum Workflow {
    static let order = ["todo", "doing", "review", "done"]

    /// How far along the workflow `status` is; a status the app does not know counts as todo.
    static func rank(_ status: Value) -> Int {
        guard case .text(let name) = status else { return 0 }
        return order.firstIndex(of: name) ?? 0
    }

    /// `status` when both sides moved a task: the step further along wins, whoever moved it
    /// last (a colleague's later "doing" does not undo a "review"); the same step, the last edit.
    static let furthestStep = FieldStrategy.custom("workflow") { input in
        let local = rank(input.local), remote = rank(input.remote)
        if local == remote { return input.lastEdit }
        return local > remote ? input.local : input.remote
    }
}
