import FieldMerge
import FieldMergeSQLite

/// One task of the team's board, as the app stores it.
struct TeamTask: StoredRecord, Equatable {
    var id: Int64 = 0
    var title = ""
    var status = "todo"
    var assignee: String?
    var minutesSpent: Int64 = 0
    /// When it was done, in milliseconds since 1970; nil unless `status` is done.
    var doneAt: Int64?

    static let table = RecordTable<TeamTask>("tasks", recordStrategy: doneAtFollowsStatus, [
        .text("title", \.title),                                            // lastEditWins
        .text("status", \.status, strategy: Workflow.furthestStep),
        .text("assignee", \.assignee),
        .integer("minutesSpent", \.minutesSpent, strategy: .counter),       // both sides' time counts
        .date("doneAt", \.doneAt),
    ])

    /// The record rule: a done task has a `doneAt`, any other task has none, whichever field
    /// each side changed (one reopens a task while the other corrects its date).
    static let doneAtFollowsStatus = ClosureRecordStrategy(name: "doneAtFollowsStatus") { input in
        var values = input.proposal                          // what the field strategies chose
        let status = 1, doneAt = 4
        if values[status] == "done" {
            if values[doneAt] == .null {                     // the later of the sides' dates
                values[doneAt] = [input.local.values[doneAt], input.remote.values[doneAt]]
                    .max { Value.precedes($0, $1) } ?? .null
            }
        } else {
            values[doneAt] = .null
        }
        return values
    }

    static let schema: Schema = {
        do { return try Schema([table.entity]) } catch { fatalError("the team-tasks schema is invalid: \(error)") }
    }()
}
