import FieldMerge
import FieldMergeProtocol
import FieldMergeServer
import Testing

/// Subscriptions (Specs/scopes.md §6), on every storage: roots a device asks for beyond its
/// user's grants, given when a `subscribe` grant allows them, backfilled in pages of whole
/// roots with the device's priority first.
extension ScopeScenario {
    /// The keys ("entity#id") of the records under project `project`, by the admin's view.
    static func records(ofProject project: Int64, in server: RevisionServer) async throws -> Set<String> {
        var admin = ScopedDevice(TeamApp.admin)
        try await admin.sync(server)
        var result: Set<String> = ["projects#\(project)"]
        var tasks: Set<Int64> = []
        for (key, record) in admin.records where record.values.count > 1 && record.values[1] == .integer(project) {
            if key.hasPrefix("tasks#") || key.hasPrefix("memberships#") { result.insert(key) }
            if key.hasPrefix("tasks#") { tasks.insert(record.id) }
        }
        for (key, record) in admin.records where key.hasPrefix("notes#") {
            if case .integer(let task) = record.values[1], tasks.contains(task) { result.insert(key) }
        }
        return result
    }

    static func subscribing(_ server: RevisionServer) async throws {
        var ann = ScopedDevice(TeamApp.ann)
        // Project 1 she holds already (a membership), 3 is the archive anyone may open, 2 is
        // bob's and 99 does not exist.
        ann.subscriptions = ScopeHoldings(["project": .ids([1, 2, 3, 99])])
        let answers = try await ann.sync(server)
        #expect(ann.scopes == ScopeHoldings(["project": .some([1, 3])]))
        #expect(answers.last?.deniedSubscriptions == ScopeHoldings(["project": .some([2, 99])]))
        let archive = try await records(ofProject: 3, in: server)
        let allowed = try await visible(to: TeamApp.ann, in: server).union(archive)
        #expect(Set(ann.records.keys) == allowed)
        #expect(ann.received.isSubset(of: allowed))
        #expect(ann.ids("tasks") == [1, 2, 5, 6])

        // Asked again, nothing new: the archive is held, so not sent again.
        let again = try await ann.sync(server)
        #expect(again[0].changeSets.flatMap(\.entities).allSatisfy { $0.records.isEmpty && $0.leave.isEmpty })

        // Dropped: the archive's records leave; her own project stays.
        ann.subscriptions = nil
        let dropped = try await ann.sync(server)
        #expect(ann.scopes == ScopeHoldings(["project": .some([1])]))
        #expect(dropped.last?.deniedSubscriptions == nil)
        #expect(leaveLists(dropped)["projects"] == [3] && leaveLists(dropped)["tasks"] == [5, 6])
        #expect(Set(ann.records.keys) == (try await visible(to: TeamApp.ann, in: server)))

        // Writes follow what the device holds: while subscribed she may edit the archive.
        ann.subscriptions = ScopeHoldings(["project": .ids([3])])
        try await ann.sync(server)
        let task = try #require(ann.records["tasks#5"])
        let edit = try await ann.sync(server, sending: [Send.changeSet(Send.update("tasks", 5, revision: task.revision!, field: 0, .text("ann's"), width: 2))])
        #expect(edit[0].changeSets.last?.conflict == false)
        ann.subscriptions = nil
        try await ann.sync(server)
        let refused = try await ann.sync(server, sending: [Send.changeSet(Send.update("tasks", 6, revision: 1, field: 0, .text("no"), width: 2))])
        #expect(refused[0].changeSets.last?.refused.map(\.code) == ["unauthorized"])

        // A scope the server does not have is a bad request.
        await #expect(throws: ServerError.self) {
            try await server.handle(
                SyncRequest(maxRevision: 0, changeSets: [], subscriptions: ScopeHoldings(["nope": .ids([1])])), identity: TeamApp.ann)
        }
    }

    static func backfillInPages(_ server: RevisionServer) async throws {
        var eve = ScopedDevice(TeamApp.auditor)
        let plain = try await {
            var bob = ScopedDevice(TeamApp.bob)
            bob.subscriptions = ScopeHoldings(["project": .ids([1])])
            return try await bob.sync(server).last?.deniedSubscriptions
        }()
        // Only auditors may open any project.
        #expect(plain == ScopeHoldings(["project": .some([1])]))

        eve.subscriptions = ScopeHoldings(["project": .ids([1, 2, 3])])
        eve.priority = ScopeHoldings(["project": .ids([3])])
        // Project 1 has 6 records, 2 has 6 and 3 has 5: a limit of 6 fits one project a page.
        let pages = try await eve.sync(server, limit: 6)
        #expect(pages.count == 3)
        #expect(pages.map(\.scopes) == [
            ScopeHoldings(["project": .some([3])]), ScopeHoldings(["project": .some([1, 3])]),
            ScopeHoldings(["project": .some([1, 2, 3])]),
        ])
        #expect(pages.map(\.hasMore) == [true, true, false])
        // Each project's records came whole in one page, the priority's first.
        for (page, project) in zip(pages, [3, 1, 2] as [Int64]) {
            var sent: Set<String> = []
            for changes in page.changeSets.flatMap(\.entities) where changes.entity != "users" {
                for record in changes.records { sent.insert("\(changes.entity)#\(record.id)") }
            }
            #expect(sent == (try await records(ofProject: project, in: server)))
        }
        #expect(eve.ids("projects") == [1, 2, 3] && eve.ids("tasks").count == 6 && eve.ids("notes").count == 6)
    }
}
