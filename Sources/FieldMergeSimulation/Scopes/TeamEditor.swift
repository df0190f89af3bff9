import FieldMerge
import FieldMergeSQLite
import FieldMergeWorkload

/// What the oracle needs of the scoped run's edits: each mark (one per raise of a task's
/// `points`, and one per task created, with its initial points) and each task deleted.
struct TeamLog: Sendable {
    struct Mark: Sendable {
        var device: Int
        /// The task as the device knew it (negative while temporary).
        var task: Int64
        var mark: String
        /// What the edit added to `points` (a create: the initial points).
        var amount: Int64
    }

    var marks: [Mark] = []
    /// Tasks deleted by a device, as [device, id as it knew it].
    var deletedTasks: Set<[Int64]> = []
    /// Membership records created and deleted, and tasks moved to another project.
    var joins = 0, leaves = 0, moves = 0

    /// The marks of a task's values.
    static func marks(in values: ContiguousArray<Value>) -> [String] {
        if case .textSet(let set) = values[TeamSchema.Tasks.marks] { return set.elements }
        return []
    }

    mutating func merge(_ other: TeamLog) {
        marks += other.marks
        deletedTasks.formUnion(other.deletedTasks)
        (joins, leaves, moves) = (joins + other.joins, leaves + other.leaves, moves + other.moves)
    }
}

/// Makes one device's edits of the team app, on what its store holds (so only within its
/// user's scope, as the device knows it): raises of a task's points with a mark, titles,
/// notes, comments, tasks created and moved between its projects, deletes, and its user's
/// status. The admin device also governs: it adds and removes memberships and moves tasks.
struct TeamEditor: Sendable {
    let device: Int
    let user: String
    /// Whether it moves tasks between the projects its store holds (the admin's moves in
    /// ``govern(_:users:)`` are always on).
    var moves = true
    var random: SplitMix64
    private var serial = 0

    init(device: Int, user: String, seed: UInt64) {
        self.device = device
        self.user = user
        random = SplitMix64(seed: seed)
    }

    /// `count` edits on `store`.
    mutating func edit(_ store: Store, count: Int) throws -> TeamLog {
        var log = TeamLog()
        for _ in 0..<count {
            let roll = random.below(100)
            let task = try pick(store, "tasks")
            switch roll {
            case ..<30: if let task { try raise(store, task: task, &log) }
            case ..<42: if let task { _ = try store.update("tasks", id: task, set: [(TeamSchema.Tasks.title, .text(fresh()))]) }
            case ..<50: if let task { try appendNote(store, task: task) }
            case ..<62: if let task { _ = try store.insert("comments", values: [.integer(task), .text(fresh()), .integer(0)]) }
            case ..<72: try touchComment(store)
            case ..<78: if let project = try pick(store, "projects") { try create(store, project: project, &log) }
            case ..<85: if let task, moves { try move(store, task: task, &log) }
            case ..<90: if let comment = try pick(store, "comments") { try store.delete("comments", id: comment) }
            case ..<93:
                if let task {
                    try store.delete("tasks", id: task)
                    log.deletedTasks.insert([Int64(device), task])
                }
            default: try setStatus(store)
            }
        }
        return log
    }

    /// The admin's part: a few users join a project, a few leave one, a few tasks move.
    mutating func govern(_ store: Store, users: [String]) throws -> TeamLog {
        var log = TeamLog()
        let members = users.dropFirst()  // u0 is an admin throughout
        for _ in 0..<(1 + random.below(2)) {
            guard let project = try pick(store, "projects"), let member = members.randomElement(using: &random) else { break }
            let existing = try store.database.rows(
                "SELECT 1 FROM memberships WHERE userID = ? AND projectID = ?", [.text(member), .integer(project)])
            guard existing.isEmpty else { continue }
            _ = try store.insert("memberships", values: [.text(member), .integer(project)])
            log.joins += 1
        }
        for _ in 0..<random.below(3) {
            guard let membership = try pick(store, "memberships", where: "userID <> 'u0'") else { break }
            try store.delete("memberships", id: membership)
            log.leaves += 1
        }
        for _ in 0..<(1 + random.below(2)) {
            guard let task = try pick(store, "tasks") else { break }
            try move(store, task: task, &log)
        }
        return log
    }

    /// Creates `count` tasks (each with a mark) in `projects`, and comments on some.
    mutating func seedTasks(_ store: Store, projects: [Int64], count: Int) throws -> TeamLog {
        var log = TeamLog()
        for _ in 0..<count {
            let task = try create(store, project: projects[random.below(projects.count)], &log)
            if random.below(2) == 0 { _ = try store.insert("comments", values: [.integer(task), .text(fresh()), .integer(0)]) }
        }
        return log
    }

    /// Raises a task's points and adds a mark for it, in one update.
    private mutating func raise(_ store: Store, task: Int64, _ log: inout TeamLog) throws {
        guard let record = try store.record("tasks", id: task) else { return }
        let step = Int64(1 + random.below(5))
        let mark = nextMark()
        guard case .integer(let points) = record.values[TeamSchema.Tasks.points].isNull ? .integer(0) : record.values[TeamSchema.Tasks.points]
        else { return }
        let marks = if case .textSet(let set) = record.values[TeamSchema.Tasks.marks] { set.elements } else { [String]() }
        _ = try store.update("tasks", id: task, set: [
            (TeamSchema.Tasks.points, .integer(points + step)), (TeamSchema.Tasks.marks, .textSet(TextSet(marks + [mark]))),
        ])
        log.marks.append(TeamLog.Mark(device: device, task: task, mark: mark, amount: step))
    }

    @discardableResult
    private mutating func create(_ store: Store, project: Int64, _ log: inout TeamLog) throws -> Int64 {
        let points = Int64(random.below(10)), mark = nextMark()
        let id = try store.insert("tasks", values: [
            .text(fresh()), .integer(project), .text(""), .integer(points), .textSet(TextSet([mark])),
        ])
        log.marks.append(TeamLog.Mark(device: device, task: id, mark: mark, amount: points))
        return id
    }

    /// Moves a task to another project the store holds.
    private mutating func move(_ store: Store, task: Int64, _ log: inout TeamLog) throws {
        guard let record = try store.record("tasks", id: task),
            let project = try pick(store, "projects", where: "id IS NOT \(Self.literal(record.values[TeamSchema.Tasks.projectID]))")
        else { return }
        _ = try store.update("tasks", id: task, set: [(TeamSchema.Tasks.projectID, .integer(project))])
        log.moves += 1
    }

    private mutating func appendNote(_ store: Store, task: Int64) throws {
        guard let record = try store.record("tasks", id: task) else { return }
        let notes = if case .text(let text) = record.values[TeamSchema.Tasks.notes] { text } else { "" }
        _ = try store.update("tasks", id: task, set: [(TeamSchema.Tasks.notes, .text(notes.isEmpty ? fresh() : notes + "\n" + fresh()))])
    }

    private mutating func touchComment(_ store: Store) throws {
        guard let comment = try pick(store, "comments"), let record = try store.record("comments", id: comment) else { return }
        if random.below(2) == 0, case .integer(let likes) = record.values[TeamSchema.Comments.likes] {
            _ = try store.update("comments", id: comment, set: [(TeamSchema.Comments.likes, .integer(likes + 1))])
        } else {
            _ = try store.update("comments", id: comment, set: [(TeamSchema.Comments.body, .text(fresh()))])
        }
    }

    private mutating func setStatus(_ store: Store) throws {
        guard let me = try pick(store, "users", where: "name = '\(user)'") else { return }
        _ = try store.update("users", id: me, set: [(TeamSchema.Users.status, .text(fresh()))])
    }

    /// A random id of `entity` that the store holds (meeting `condition`), or nil.
    private mutating func pick(_ store: Store, _ entity: String, where condition: String = "1") throws -> Int64? {
        let ids = try store.database.rows("SELECT id FROM \(Database.quote(entity)) WHERE \(condition) ORDER BY id").compactMap { row -> Int64? in
            if case .integer(let id)? = row.first { return id }
            return nil
        }
        return ids.isEmpty ? nil : ids[random.below(ids.count)]
    }

    private static func literal(_ value: Value) -> String {
        if case .integer(let id) = value { return String(id) }
        return "NULL"
    }

    private mutating func fresh() -> String {
        serial += 1
        return "d\(device)n\(serial)"
    }

    private mutating func nextMark() -> String {
        serial += 1
        return "d\(device)m\(serial)"
    }
}
