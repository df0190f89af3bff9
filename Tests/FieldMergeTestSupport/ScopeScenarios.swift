import FieldMerge
import FieldMergeProtocol
import FieldMergeServer
import Testing

/// Scoped sync on the server (Specs/scopes.md), written once for every storage: each device
/// receives exactly the records of the roots its user holds, gains old records when access
/// grows, is told to drop them when it shrinks, and may write only inside its scope. A
/// storage's suite runs every case on a new server of ``TeamApp`` it makes
/// (`@Test(arguments: ScopeScenario.allCases)`).
public enum ScopeScenario: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case aDeviceReceivesOnlyItsProjects
    case pagesOfAScopedCatchUpHoldNothingForeign
    case joiningAProjectBringsItsOldRecords
    case leavingAProjectRemovesItsRecordsFromTheDevice
    case aTaskMovedBetweenProjectsLeavesOneDeviceAndReachesTheOther
    case writesOutsideTheScopeAreRefusedRecordByRecordWithoutLeakingTheTruth
    case aProjectCreatedWithItsMembershipAndTasksIsHeldAtOnce
    case aDeviceThatSyncedBeforeScopesIsToldToDropWhatItMayNotHold
    case deletingAProjectCascadesOnlyWithinIt
    case aSubscriptionBringsAnAllowedProjectNamesTheDeniedOnesAndLeavesWhenDropped
    case anAuditorsBackfillComesInPagesOfWholeProjectsItsPriorityFirst

    public var testDescription: String { rawValue }

    /// Runs the scenario on the empty server `makeServer` returns (with ``TeamApp/schema``
    /// and ``TeamApp/options(mode:)``).
    public func run(on makeServer: () async throws -> RevisionServer) async throws {
        let server = try await makeServer()
        let admin = try await Self.seed(server)
        switch self {
        case .aDeviceReceivesOnlyItsProjects: try await Self.onlyItsProjects(server)
        case .pagesOfAScopedCatchUpHoldNothingForeign: try await Self.pagesHoldNothingForeign(server)
        case .joiningAProjectBringsItsOldRecords: try await Self.joining(server, admin)
        case .leavingAProjectRemovesItsRecordsFromTheDevice: try await Self.leaving(server, admin)
        case .aTaskMovedBetweenProjectsLeavesOneDeviceAndReachesTheOther: try await Self.taskMoved(server, admin)
        case .writesOutsideTheScopeAreRefusedRecordByRecordWithoutLeakingTheTruth: try await Self.writesOutside(server)
        case .aProjectCreatedWithItsMembershipAndTasksIsHeldAtOnce: try await Self.createdTogether(server)
        case .aDeviceThatSyncedBeforeScopesIsToldToDropWhatItMayNotHold: try await Self.syncedBeforeScopes(server)
        case .deletingAProjectCascadesOnlyWithinIt: try await Self.deletingAProject(server, admin)
        case .aSubscriptionBringsAnAllowedProjectNamesTheDeniedOnesAndLeavesWhenDropped: try await Self.subscribing(server)
        case .anAuditorsBackfillComesInPagesOfWholeProjectsItsPriorityFirst: try await Self.backfillInPages(server)
        }
    }

    /// Three projects: ann is a member of 1, bob of 2, nobody of 3; each has two tasks with a
    /// note each. Returns the admin's device.
    public static func seed(_ server: RevisionServer) async throws -> ScopedDevice {
        var admin = ScopedDevice(TeamApp.admin)
        var entities = [
            Send.create("users", -1, [.text("Ann")]),
            EntityChanges(entity: "projects"), EntityChanges(entity: "memberships"), EntityChanges(entity: "tasks"),
            EntityChanges(entity: "notes"),
        ]
        for project in 1...3 {
            let p = Int64(-project)
            entities[1].create.append(p)
            entities[1].records.append(WireRecord(id: p, present: FieldMask.all(count: 2), values: [.text("P\(project)"), .text("root")]))
            for task in 1...2 {
                let t = Int64(-(project * 10 + task))
                entities[3].create.append(t)
                entities[3].records.append(WireRecord(id: t, present: FieldMask.all(count: 2), values: [.text("T\(project).\(task)"), .integer(p)]))
                entities[4].create.append(t)
                entities[4].records.append(WireRecord(id: t, present: FieldMask.all(count: 2), values: [.text("N\(project).\(task)"), .integer(t)]))
            }
        }
        for (user, project) in [("ann", -1), ("bob", -2)] {
            let m = Int64(-(entities[2].create.count + 1))
            entities[2].create.append(m)
            entities[2].records.append(WireRecord(id: m, present: FieldMask.all(count: 2), values: [.text(user), .integer(Int64(project))]))
        }
        try await admin.sync(server, sending: [ChangeSet(entities: entities)])
        #expect(admin.scopes == ScopeHoldings(["project": .all]))
        #expect(admin.ids("projects") == [1, 2, 3] && admin.ids("tasks").count == 6 && admin.ids("memberships") == [1, 2])
        return admin
    }

    /// The records a device of `identity` may hold now, by the server's own state: what the
    /// oracle compares with.
    static func visible(to identity: SyncIdentity, in server: RevisionServer) async throws -> Set<String> {
        var admin = ScopedDevice(TeamApp.admin)
        try await admin.sync(server)
        let records = admin.records
        let member = Set(records.filter { $0.key.hasPrefix("memberships#") && $0.value.values[0] == .text(identity.user) }
            .compactMap { entry -> Int64? in if case .integer(let p) = entry.value.values[1] { return p } else { return nil } })
        let owned = Set(records.filter { $0.key.hasPrefix("projects#") && $0.value.values[1] == .text(identity.user) }.map(\.value.id))
        let projects = identity.roles.contains("admin") ? Set(records.keys.filter { $0.hasPrefix("projects#") }.map { Int64($0.dropFirst(9))! }) : member.union(owned)
        var tasks: Set<Int64> = []
        var result: Set<String> = Set(records.keys.filter { $0.hasPrefix("users#") })
        for (key, record) in records {
            func reference(_ index: Int) -> Int64? { if case .integer(let id) = record.values[index] { return id } else { return nil } }
            if key.hasPrefix("projects#"), projects.contains(record.id) { result.insert(key) }
            if key.hasPrefix("memberships#"), let p = reference(1), projects.contains(p) { result.insert(key) }
            if key.hasPrefix("tasks#"), let p = reference(1), projects.contains(p) { result.insert(key); tasks.insert(record.id) }
        }
        for (key, record) in records where key.hasPrefix("notes#") {
            if case .integer(let t) = record.values[1], tasks.contains(t) { result.insert(key) }
        }
        return result
    }

    /// The leave lists of `answers`, by entity.
    static func leaveLists(_ answers: [SyncResponse]) -> [String: [Int64]] {
        answers.flatMap(\.changeSets).flatMap(\.entities).reduce(into: [String: [Int64]]()) { $0[$1.entity, default: []] += $1.leave }
    }

    static func onlyItsProjects(_ server: RevisionServer) async throws {
        var ann = ScopedDevice(TeamApp.ann)
        try await ann.sync(server)
        #expect(ann.ids("projects") == [1])
        #expect(ann.ids("tasks") == [1, 2])
        #expect(ann.ids("notes") == [1, 2])
        #expect(ann.ids("memberships") == [1])
        #expect(ann.ids("users") == [1])
        #expect(ann.scopes == ScopeHoldings(["project": .some([1])]))
        #expect(Set(ann.records.keys) == (try await visible(to: TeamApp.ann, in: server)))
    }

    static func pagesHoldNothingForeign(_ server: RevisionServer) async throws {
        var bob = ScopedDevice(TeamApp.bob)
        let pages = try await bob.sync(server, limit: 2)
        #expect(pages.count >= 1)
        #expect(bob.received.isSubset(of: try await visible(to: TeamApp.bob, in: server)))
        #expect(Set(bob.records.keys) == (try await visible(to: TeamApp.bob, in: server)))
    }

    static func joining(_ server: RevisionServer, _ admin: ScopedDevice) async throws {
        var admin = admin, ann = ScopedDevice(TeamApp.ann)
        try await ann.sync(server)
        // Project 3's records are older than ann's cursor: catch-up by revision alone would never send them.
        try await admin.sync(server, sending: [Send.changeSet(Send.create("memberships", -9, [.text("ann"), .integer(3)]))])
        try await ann.sync(server)
        #expect(ann.ids("projects") == [1, 3])
        #expect(ann.ids("tasks") == [1, 2, 5, 6])
        #expect(ann.ids("notes") == [1, 2, 5, 6])
        #expect(ann.scopes == ScopeHoldings(["project": .some([1, 3])]))
        #expect(Set(ann.records.keys) == (try await visible(to: TeamApp.ann, in: server)))
    }

    static func leaving(_ server: RevisionServer, _ admin: ScopedDevice) async throws {
        var admin = admin, bob = ScopedDevice(TeamApp.bob)
        try await bob.sync(server)
        #expect(bob.ids("tasks") == [3, 4])
        let revision = admin.records["memberships#2"]!.revision!
        try await admin.sync(server, sending: [Send.changeSet(Send.delete("memberships", 2, revision: revision, width: 2))])
        let answers = try await bob.sync(server)
        #expect(bob.ids("projects").isEmpty && bob.ids("tasks").isEmpty && bob.ids("notes").isEmpty && bob.ids("memberships").isEmpty)
        #expect(bob.scopes == ScopeHoldings(["project": .none]))
        // Told to leave, never told they were deleted: the server keeps them.
        let leaves = leaveLists(answers)
        #expect(leaves["tasks"] == [3, 4] && leaves["notes"] == [3, 4] && leaves["projects"] == [2])
        #expect(answers.flatMap(\.changeSets).flatMap(\.entities).allSatisfy { $0.entity == "memberships" || $0.delete.isEmpty })
        try await admin.sync(server)
        #expect(admin.ids("tasks").contains(3))
    }

    static func taskMoved(_ server: RevisionServer, _ admin: ScopedDevice) async throws {
        var admin = admin, ann = ScopedDevice(TeamApp.ann), bob = ScopedDevice(TeamApp.bob)
        try await ann.sync(server)
        try await bob.sync(server)
        let task = admin.records["tasks#1"]!
        try await admin.sync(server, sending: [Send.changeSet(Send.update("tasks", 1, revision: task.revision!, field: 1, .integer(2), width: 2))])
        try await ann.sync(server)
        try await bob.sync(server)
        #expect(ann.ids("tasks") == [2] && ann.ids("notes") == [2])
        #expect(bob.ids("tasks") == [1, 3, 4] && bob.ids("notes") == [1, 3, 4])
        #expect(Set(ann.records.keys) == (try await visible(to: TeamApp.ann, in: server)))
        #expect(Set(bob.records.keys) == (try await visible(to: TeamApp.bob, in: server)))
    }

    static func writesOutside(_ server: RevisionServer) async throws {
        var ann = ScopedDevice(TeamApp.ann)
        try await ann.sync(server)
        // Tasks 3 and 4 are in bob's project; ann names 3 with its real revision, then with an
        // older one (as a device that held it once would), and deletes 4 on an older one:
        // refused as outside her scope, whatever the revision.
        let answers = try await ann.sync(server, sending: [
            Send.changeSet(Send.update("tasks", 3, revision: 1, field: 0, .text("mine now"), width: 2)),
            Send.changeSet(Send.update("tasks", 3, revision: 0, field: 0, .text("stale"), width: 2)),
            Send.changeSet(Send.delete("tasks", 4, revision: 0, width: 2)),
            Send.changeSet(Send.create("tasks", -1, [.text("sneaked in"), .integer(2)])),
            Send.changeSet(Send.create("tasks", -2, [.text("fine"), .integer(1)])),
        ])
        let sets = answers[0].changeSets.suffix(5)
        #expect(sets.map(\.conflict) == [true, true, true, true, false])
        #expect(sets.map { $0.refused.map(\.code) } == [["unauthorized"], ["unauthorized"], ["unauthorized"], ["unauthorized"], []])
        #expect(sets.flatMap(\.entities).flatMap(\.records).allSatisfy { $0.id != 3 && $0.id != 4 })
        #expect(ann.received.isSubset(of: try await visible(to: TeamApp.ann, in: server)))
        var admin = ScopedDevice(TeamApp.admin)
        try await admin.sync(server)
        #expect(admin.records["tasks#3"]?.values[0] == .text("T2.1"))
        #expect(admin.ids("tasks").count == 7)
    }

    static func createdTogether(_ server: RevisionServer) async throws {
        var bob = ScopedDevice(TeamApp.bob)
        try await bob.sync(server)
        let answers = try await bob.sync(server, sending: [Send.changeSet(
            Send.create("projects", -1, [.text("Bob's"), .null]),
            Send.create("memberships", -1, [.text("bob"), .integer(-1)]),
            Send.create("tasks", -1, [.text("first"), .integer(-1)]))])
        #expect(answers[0].changeSets.last?.conflict == false)
        #expect(bob.scopes == ScopeHoldings(["project": .some([2, 4])]))
        let again = try await bob.sync(server)
        #expect(again[0].changeSets.flatMap(\.entities).allSatisfy { $0.records.isEmpty && $0.leave.isEmpty })
        // A project without a grant for its creator lands outside the scope: refused.
        let refused = try await bob.sync(server, sending: [Send.changeSet(Send.create("projects", -2, [.text("orphan"), .null]))])
        #expect(refused[0].changeSets.last?.refused.map(\.code) == ["unauthorized"])
    }

    static func syncedBeforeScopes(_ server: RevisionServer) async throws {
        let answer = try await server.handle(SyncRequest(maxRevision: 1, changeSets: []), identity: TeamApp.ann)
        let leaves = leaveLists([answer])
        #expect(leaves["projects"] == [2, 3])
        #expect(leaves["tasks"] == [3, 4, 5, 6])
        #expect(answer.scopes == ScopeHoldings(["project": .some([1])]))
    }

    static func deletingAProject(_ server: RevisionServer, _ admin: ScopedDevice) async throws {
        var admin = admin, ann = ScopedDevice(TeamApp.ann), bob = ScopedDevice(TeamApp.bob)
        try await ann.sync(server)
        try await bob.sync(server)
        // The admin deletes project 2: its tasks lose their project (setNull) and with it
        // their root: nobody but admins holds them now.
        try await admin.sync(server, sending: [Send.changeSet(Send.delete("projects", 2, revision: admin.records["projects#2"]!.revision!, width: 2))])
        try await bob.sync(server)
        try await ann.sync(server)
        #expect(bob.ids("tasks").isEmpty && bob.ids("projects").isEmpty)
        #expect(ann.ids("tasks") == [1, 2])
        #expect(Set(bob.records.keys) == (try await visible(to: TeamApp.bob, in: server)))
    }
}
