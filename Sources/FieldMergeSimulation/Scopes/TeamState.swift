import FieldMerge
import FieldMergeSQLite

/// The records of the team app as one database holds them (the server's, or a device's):
/// every row's field values by entity and id, read with plain SQL from the app tables, whose
/// columns a store and the SQLite server share. The oracle computes from it, by the rules and
/// independently of the server's own bookkeeping, what each user may see.
struct TeamState: Sendable {
    /// Field values by entity name and id.
    var rows: [String: [Int64: ContiguousArray<Value>]] = [:]
    /// The server's revision of each record ("entity#id"), and its latest revision: read
    /// only from a server.
    var revisions: [String: Int64] = [:]
    var maxRevision: Int64 = 0

    init() {}

    /// Reads every app table of `database`; with `revisions`, also the server's
    /// `__fm_revision` column (a server's tables only).
    init(_ database: Database, schema: Schema = TeamSchema.schema, revisions: Bool = false) throws {
        for entity in schema.entities {
            var columns = (["id"] + entity.fields.map(\.name)).map(Database.quote)
            if revisions { columns.append("\"__fm_revision\"") }
            var table: [Int64: ContiguousArray<Value>] = [:]
            let statement = try database.statement("SELECT \(columns.joined(separator: ", ")) FROM \(Database.quote(entity.name))")
            defer { statement.reset() }
            while try statement.step() {
                guard case .integer(let id) = statement.value(0) else { continue }
                var values = ContiguousArray<Value>()
                for (index, field) in entity.fields.enumerated() {
                    values.append(statement.value(Int32(index + 1), as: field.type) ?? .null)
                }
                table[id] = values
                if revisions, case .integer(let revision) = statement.value(Int32(entity.fields.count + 1)) {
                    self.revisions["\(entity.name)#\(id)"] = revision
                }
            }
            rows[entity.name] = table
        }
    }

    /// The project a record lies under, following references toward the root: its own id for
    /// a project, nil for a record with a null reference on the way or of an unscoped entity.
    func root(_ entity: String, _ id: Int64) -> Int64? {
        if entity == "projects" { return rows["projects"]?[id] != nil ? id : nil }
        guard let (parent, field) = TeamSchema.parent[entity], let values = rows[entity]?[id],
            case .integer(let parentID) = values[field]
        else { return nil }
        return root(parent, parentID)
    }

    /// The projects `user` holds by its memberships; every one (nil) with the admin role.
    func grants(user: String, roles: Set<String>) -> Set<Int64>? {
        if roles.contains(TeamSchema.adminRole) { return nil }
        var projects: Set<Int64> = []
        for values in (rows["memberships"] ?? [:]).values {
            guard values[TeamSchema.Memberships.userID] == .text(user),
                case .integer(let project) = values[TeamSchema.Memberships.projectID]
            else { continue }
            projects.insert(project)
        }
        return projects
    }

    /// Whether a record with this root is visible under `grants` (nil: every record).
    static func visible(_ entity: String, root: Int64?, grants: Set<Int64>?) -> Bool {
        guard TeamSchema.scoped.contains(entity), let grants else { return true }
        return root.map(grants.contains) ?? false
    }

    /// The rows a user with `grants` may hold.
    func visibleRows(grants: Set<Int64>?) -> [String: [Int64: ContiguousArray<Value>]] {
        var result: [String: [Int64: ContiguousArray<Value>]] = [:]
        for (entity, table) in rows {
            result[entity] = table.filter { Self.visible(entity, root: root(entity, $0.key), grants: grants) }
        }
        return result
    }

    /// The root and the parent (the record its reference toward the root names) of every
    /// record of a scoped entity, by "entity#id" (for records that are later deleted).
    func links() -> [String: (root: Int64?, parent: (entity: String, id: Int64)?)] {
        var result: [String: (root: Int64?, parent: (entity: String, id: Int64)?)] = [:]
        for entity in TeamSchema.scoped {
            for (id, values) in rows[entity] ?? [:] {
                var parent: (entity: String, id: Int64)?
                if let (target, field) = TeamSchema.parent[entity], case .integer(let parentID) = values[field] { parent = (target, parentID) }
                result["\(entity)#\(id)"] = (root(entity, id), parent)
            }
        }
        return result
    }

    /// The ids of `entity`, ascending.
    func ids(_ entity: String) -> [Int64] { (rows[entity] ?? [:]).keys.sorted() }
}
