import FieldMerge

/// The scoped run's final checks (Specs/simulation.md, "Scopes"), on the server's records
/// and each device's after settling:
/// - **holdings**: each device holds exactly the records its user may see by the rules in
///   the server's final state, with the server's values;
/// - **marks**: each raise of a task's points (and each task created) left a unique mark; a
///   mark is in the final data, or its device noted it in a change it gave up (kept aside
///   or refused), or its task is gone (deleted by someone, or by the device itself); and
///   each task's points are exactly the sum of the marks it holds: no increment the server
///   took was lost, and none it did not take was counted.
struct ScopeOracle {
    /// One device at the end.
    struct DeviceEnd {
        var index: Int
        var user: String
        var roles: Set<String>
        var state: TeamState
        /// Its temporary task ids with the permanent ids the server gave them.
        var taskIDs: [Int64: Int64]
    }

    struct MarkCounts: Sendable, Equatable {
        var confirmed = 0, givenUp = 0, gone = 0
    }

    let server: TeamState
    let log: TeamLog
    /// The marks in the changes each device gave up (kept aside or refused), by device.
    let givenUp: [Int: Set<String>]
    /// Devices whose marks are not judged (stuck: their edits may never have been sent).
    let leftOut: Set<Int>
    var violations = Violations()
    var marks = MarkCounts()

    init(server: TeamState, log: TeamLog, givenUp: [Int: Set<String>], leftOut: Set<Int> = []) {
        self.server = server
        self.log = log
        self.givenUp = givenUp
        self.leftOut = leftOut
    }

    /// Each device holds exactly what its user may see, as the server has it.
    /// - Returns: Whether it does.
    @discardableResult
    mutating func checkHoldings(_ device: DeviceEnd) -> Bool {
        let before = violations.count
        let expected = server.visibleRows(grants: server.grants(user: device.user, roles: device.roles))
        for entity in TeamSchema.schema.entities.map(\.name) {
            let mine = device.state.rows[entity] ?? [:], theirs = expected[entity] ?? [:]
            let name = "device \(device.index) (\(device.user))"
            for id in theirs.keys.sorted() where mine[id] == nil {
                violations.add("holdings: \(name) lacks \(entity)#\(id), which \(device.user) may see")
            }
            for id in mine.keys.sorted() {
                guard let values = theirs[id] else {
                    let reason = server.rows[entity]?[id] == nil ? "which the server does not have" : "which \(device.user) may not see"
                    violations.add("holdings: \(name) holds \(entity)#\(id), \(reason)")
                    continue
                }
                if values != mine[id] { violations.add("holdings: \(name) holds \(entity)#\(id) as \(mine[id]!), the server \(values)") }
            }
        }
        return violations.count == before
    }

    /// Every mark is accounted for, and every task's points add up to its marks.
    mutating func checkMarks(_ devices: [DeviceEnd]) {
        var place: [String: Int64] = [:]
        for id in server.ids("tasks") {
            for mark in TeamLog.marks(in: server.rows["tasks"]![id]!) {
                if let other = place[mark] {
                    violations.add("twice: \(mark) is on tasks \(other) and \(id) (a create or an edit the server took twice)")
                }
                place[mark] = id
            }
        }
        var amounts: [String: Int64] = [:]
        for mark in log.marks {
            amounts[mark.mark] = mark.amount
            guard !leftOut.contains(mark.device) else { continue }
            let idMap = devices.first { $0.index == mark.device }?.taskIDs ?? [:]
            let task = mark.task > 0 ? mark.task : idMap[mark.task]
            if let found = place[mark.mark] {
                marks.confirmed += 1
                if let task, task != found {
                    violations.add("marks: \(mark.mark) (device \(mark.device), task \(task)) is on task \(found)")
                }
            } else if givenUp[mark.device]?.contains(mark.mark) == true {
                marks.givenUp += 1
            } else if log.deletedTasks.contains([Int64(mark.device), mark.task]) || task.map({ server.rows["tasks"]?[$0] == nil }) == true {
                marks.gone += 1
            } else {
                let what = task.map { "task \($0)" } ?? "task \(mark.task), never given a permanent id,"
                violations.add("lost: device \(mark.device)'s \(mark.mark) on \(what) is neither in the data nor in a change it gave up")
            }
        }
        for (id, values) in server.rows["tasks"] ?? [:] {
            guard case .textSet(let set) = values[TeamSchema.Tasks.marks] else { continue }
            var sum: Int64 = 0
            for mark in set.elements {
                guard let amount = amounts[mark] else {
                    violations.add("marks: task \(id) holds \(mark), which no device made")
                    continue
                }
                sum += amount
            }
            if values[TeamSchema.Tasks.points] != .integer(sum) {
                violations.add("lost: task \(id) has \(values[TeamSchema.Tasks.points]) points, its marks add up to \(sum)")
            }
        }
    }
}
