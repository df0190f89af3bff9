import FieldMerge
import FieldMergeServer

/// The schema and scope rules of `fieldmerge simulate --scopes`: a team app where users see
/// the projects they are members of (Specs/scopes.md, Specs/simulation.md "Scopes").
///
/// `users` is unscoped (every device holds it); `projects` is the root of the scope
/// `project`, with `memberships` and `tasks` under a project and `comments` under a task.
/// A user holds the projects its memberships name (`userID` is the token's subject), and
/// every project while it has the role `admin`.
public enum TeamSchema {
    public static let schema: Schema = {
        do { return try Schema(entities) } catch { fatalError("TeamSchema is invalid: \(error)") }
    }()

    static let entities: [Entity] = [
        Entity("users", fields: [Field("name", .text), Field("status", .text)]),
        Entity("projects", fields: [Field("name", .text)]),
        Entity("memberships", fields: [
            Field("userID", .text), Field("projectID", .reference(to: "projects", onDelete: .cascade)),
        ]),
        Entity("tasks", fields: [
            Field("title", .text), Field("projectID", .reference(to: "projects", onDelete: .setNull)),
            Field("notes", .text, strategy: .text), Field("points", .integer, strategy: .counter),
            // One unique mark per edit that raises `points` (and one per create): the oracle
            // knows from the marks which increments the server took.
            Field("marks", .textSet, strategy: .union),
        ]),
        Entity("comments", fields: [
            Field("taskID", .reference(to: "tasks", onDelete: .cascade)), Field("body", .text),
            Field("likes", .integer, strategy: .counter),
        ]),
    ]

    /// The role that holds every project.
    public static let adminRole = "admin"

    /// The scope: projects, what hangs under them, and who holds which.
    public static let rules = ScopeRules([
        SyncScope(
            "project", root: "projects", members: ["memberships": "projectID", "tasks": "projectID", "comments": "taskID"],
            grants: [
                .through(entity: "memberships", reference: "projectID", where: [SyncScope.Condition("userID", .claim("sub"))]),
                .roles([adminRole]),
            ])
    ])

    /// ``rules`` as a `fieldmerge serve --policy` document (Specs/http.md §7), with everyone
    /// allowed to write, as the run's own server does: what servers in other processes serve
    /// a scoped run with (`ScopedSimulationOverHTTPTests` checks that it reads as ``rules``).
    public static let policy = #"""
        {"default": {"write": ["*"]},
         "scopes": {"project": {
           "root": "projects",
           "members": {"memberships": "projectID", "tasks": "projectID", "comments": "taskID"},
           "grants": [{"through": "memberships", "reference": "projectID", "where": {"userID": {"claim": "sub"}}},
                      {"roles": ["admin"]}]}}}

        """#

    /// Field positions the simulation writes by.
    enum Users { static let name = 0, status = 1 }
    enum Memberships { static let userID = 0, projectID = 1 }
    enum Tasks { static let title = 0, projectID = 1, notes = 2, points = 3, marks = 4 }
    enum Comments { static let taskID = 0, body = 1, likes = 2 }

    /// Each scoped entity's reference toward the root: (the referenced entity, the field).
    static let parent: [String: (entity: String, field: Int)] = [
        "memberships": ("projects", Memberships.projectID), "tasks": ("projects", Tasks.projectID),
        "comments": ("tasks", Comments.taskID),
    ]

    /// The entities of the scope, root first.
    static let scoped: Set<String> = ["projects", "memberships", "tasks", "comments"]
}
