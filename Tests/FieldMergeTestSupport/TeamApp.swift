import FieldMerge
import FieldMergeProtocol
import FieldMergeServer

/// A team app: projects with members, tasks and notes under projects, users for everyone;
/// the schema and scope rules of the scope scenarios (``ScopeScenario``), on any storage.
public enum TeamApp {
    public static let schema = try! Schema([
        Entity("users", fields: [Field("name", .text)]),
        Entity("projects", fields: [Field("name", .text), Field("ownerID", .text)]),
        Entity("memberships", fields: [
            Field("userID", .text), Field("projectID", .reference(to: "projects", onDelete: .cascade)),
        ]),
        Entity("tasks", fields: [Field("title", .text), Field("projectID", .reference(to: "projects", onDelete: .setNull))]),
        Entity("notes", fields: [Field("body", .text), Field("taskID", .reference(to: "tasks", onDelete: .cascade))]),
    ])

    /// A user holds the projects it is a member of (or owns); admins hold every project. A
    /// device may also subscribe to the project named "P3" (an archive anyone may open),
    /// and an auditor's to any project.
    public static let rules = ScopeRules([
        SyncScope(
            "project", root: "projects", members: ["memberships": "projectID", "tasks": "projectID", "notes": "taskID"],
            grants: [
                .through(entity: "memberships", reference: "projectID", where: [SyncScope.Condition("userID", .claim("sub"))]),
                .roots(where: [SyncScope.Condition("ownerID", .claim("sub"))]),
                .roles(["admin"]),
                .subscribe(where: [SyncScope.Condition("name", .value(.text("P3")))]),
                .subscribe(roles: ["auditor"]),
            ])
    ])

    /// A server's options with the rules: `RevisionServer(storage:schema:options:)` on any
    /// storage, or `RevisionServer(.memory, schema:options:)` on SQLite.
    public static func options(mode: RevisionServer.Mode = .strict) -> RevisionServer.Options {
        var options = RevisionServer.Options()
        options.scopes = rules
        options.mode = mode
        return options
    }

    public static let admin = SyncIdentity(user: "root", roles: ["admin"])
    public static let ann = SyncIdentity(user: "ann")
    public static let bob = SyncIdentity(user: "bob")
    public static let auditor = SyncIdentity(user: "eve", roles: ["auditor"])
}

/// A device as the server sees it: its cursor, its holdings, and what it was sent.
public struct ScopedDevice {
    public let identity: SyncIdentity
    public var maxRevision: Int64 = 0
    public var scopes: ScopeHoldings?
    /// What it holds, by "entity#id" (applied from every response, leaves removed).
    public var records: [String: WireRecord] = [:]
    /// Every record any response carried to it, by "entity#id".
    public var received: Set<String> = []
    public var responses: [SyncResponse] = []
    /// The roots it subscribes to and wants first (sent with every request).
    public var subscriptions: ScopeHoldings?
    public var priority: ScopeHoldings?

    public init(_ identity: SyncIdentity) { self.identity = identity }

    /// Syncs until no page is left, sending `changeSets` with the first request.
    @discardableResult
    public mutating func sync(_ server: RevisionServer, sending changeSets: [ChangeSet] = [], limit: Int? = nil) async throws -> [SyncResponse] {
        var answers: [SyncResponse] = []
        var sending = changeSets
        repeat {
            let request = SyncRequest(
                maxRevision: maxRevision, changeSets: sending, limit: limit, scopes: scopes, subscriptions: subscriptions,
                priority: priority)
            sending = []
            let response = try await server.handle(request, identity: identity)
            apply(response)
            answers.append(response)
        } while answers.last!.hasMore
        responses += answers
        return answers
    }

    public mutating func apply(_ response: SyncResponse) {
        for changeSet in response.changeSets where changeSet.conflict != true {
            for changes in changeSet.entities {
                for record in changes.records {
                    let key = "\(changes.entity)#\(record.id)"
                    received.insert(key)
                    if changes.delete.contains(record.id) { records[key] = nil } else { records[key] = record }
                    if let old = record.oldID { records["\(changes.entity)#\(old)"] = nil }
                }
                for id in changes.leave { records["\(changes.entity)#\(id)"] = nil }
            }
        }
        maxRevision = response.maxRevision
        scopes = response.scopes
    }

    /// The ids it holds of `entity`, ascending.
    public func ids(_ entity: String) -> [Int64] {
        records.keys.filter { $0.hasPrefix(entity + "#") }.compactMap { Int64($0.dropFirst(entity.count + 1)) }.sorted()
    }
}

/// Change sets as a device sends them.
public enum Send {
    public static func create(_ entity: String, _ id: Int64, _ values: [Value]) -> EntityChanges {
        EntityChanges(entity: entity, create: [id], records: [WireRecord(id: id, present: FieldMask.all(count: values.count), values: ContiguousArray(values))])
    }

    public static func update(_ entity: String, _ id: Int64, revision: Int64, field: Int, _ value: Value, width: Int) -> EntityChanges {
        var values = ContiguousArray<Value>(repeating: .null, count: width)
        values[field] = value
        return EntityChanges(entity: entity, update: [id], records: [WireRecord(id: id, present: FieldMask([field]), values: values, revision: revision)])
    }

    public static func delete(_ entity: String, _ id: Int64, revision: Int64, width: Int) -> EntityChanges {
        EntityChanges(entity: entity, delete: [id], records: [
            WireRecord(id: id, present: FieldMask(), values: ContiguousArray(repeating: .null, count: width), revision: revision)
        ])
    }

    public static func changeSet(_ entities: EntityChanges...) -> ChangeSet { ChangeSet(entities: entities) }
}
