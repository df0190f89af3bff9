import ArgumentParser
import FieldMerge
import FieldMergeProtocol
import FieldMergeSQLite
import FieldMergeServer
import FieldMergeServerSQLite
import FieldMergeSync
import FieldMergeToolSupport
import Foundation

/// `fieldmerge bench scopes` (Specs/benchmarks.md, "Scopes"): a team app whose projects hold
/// the same number of tasks each; a user who is a member of one project.
struct ScopeBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "scopes",
        abstract: "Scoped sync: a member of 1 project among many (initial sync against a data set of that project alone, incremental sync at two data-set sizes, joining a project)."
    )

    @Option(help: "Tasks in the whole data set (the larger size).")
    var records = 1_000_000
    @Option(help: "Tasks in the data set of the smaller size (incremental comparison).")
    var smallRecords = 100_000
    @Option(help: "Tasks per project.")
    var perProject = 10_000
    @Option(help: "Changes in the incremental sync.")
    var changes = 1_000
    @Option(help: "Records per request (catch-up page size).")
    var batchSize = 10_000
    @Option(help: "Timed runs per step; the median is reported.")
    var runs = 3

    func validate() throws {
        guard perProject > 0, records >= perProject, smallRecords >= perProject, changes > 0, changes <= perProject, runs > 0 else {
            throw ValidationError("need records, small-records ≥ per-project > 0 and 0 < changes ≤ per-project")
        }
    }

    static let schema = try! Schema([
        Entity("projects", fields: [Field("name", .text)]),
        Entity("memberships", fields: [Field("userID", .text), Field("projectID", .reference(to: "projects", onDelete: .cascade))]),
        Entity("tasks", fields: [
            Field("title", .text), Field("notes", .text), Field("done", .bool), Field("priority", .integer),
            Field("projectID", .reference(to: "projects", onDelete: .cascade)),
        ]),
    ])

    static let rules = ScopeRules([SyncScope(
        "project", root: "projects", members: ["memberships": "projectID", "tasks": "projectID"],
        grants: [.through(entity: "memberships", reference: "projectID", where: [SyncScope.Condition("userID", .claim("sub"))])])])

    func run() async throws {
        let folder = NSTemporaryDirectory() + "fieldmerge-scope-bench-" + UUID().uuidString
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let probe = PhaseTotals()

        // The reference: a data set that is the member's project alone, no scopes.
        let alone = try await seededServer(folder + "/alone.sqlite", projects: 1, scoped: false, probe: probe)
        let reference = try await initialSyncs(alone, user: "member", folder: folder, name: "alone", probe: probe)
        print(reference.line(step: "scopes-initial-reference", records: perProject).render())

        var incremental: [(records: Int, seconds: [Double], server: [Double])] = []
        for total in [smallRecords, records] {
            let projects = total / perProject
            let server = try await seededServer(folder + "/scoped-\(total).sqlite", projects: projects, scoped: true, probe: probe)
            if total == records {
                let scoped = try await initialSyncs(server, user: "member", folder: folder, name: "scoped", probe: probe)
                var line = scoped.line(step: "scopes-initial", records: total)
                line.add("held", perProject)
                line.add("time_ratio", scoped.median / reference.median)
                line.add("bytes_ratio", Double(scoped.bytes) / Double(reference.bytes))
                print(line.render())
            }
            let (seconds, serverSeconds) = try await incrementalSyncs(server, folder: folder, name: "\(total)", probe: probe)
            incremental.append((total, seconds, serverSeconds))
            if total == records { try await join(server, folder: folder, probe: probe) }
        }
        for (total, seconds, server) in incremental {
            var line = BenchLine(step: "scopes-incremental", records: total, seconds: median(seconds), runs: runs, ops: changes, opUnit: "records")
            line.add("seconds_all", seconds)
            line.add("server_ms", median(server) * 1_000)
            line.add("server_ms_all", server.map { $0 * 1_000 })
            print(line.render())
        }
    }

    /// A server of `projects` projects of ``perProject`` tasks, with `member` in project 1
    /// and `writer` in every project, seeded through the server (not timed).
    func seededServer(_ path: String, projects: Int, scoped: Bool, probe: PhaseTotals) async throws -> RevisionServer {
        var options = RevisionServer.Options()
        options.scopes = scoped ? Self.rules : nil
        options.probe = probe
        let server = try RevisionServer(.file(path: path), schema: Self.schema, options: options)
        // The writer is a member of every project: it may create them.
        let admin = SyncIdentity(user: "writer")
        var revision: Int64 = 0
        for project in 1...projects {
            var changeSets = [ChangeSet(entities: [
                EntityChanges(entity: "projects", create: [-1], records: [WireRecord(id: -1, present: FieldMask.all(count: 1), values: [.text("project \(project)")])]),
                EntityChanges(entity: "memberships", create: [-1, -2], records: [
                    WireRecord(id: -1, present: FieldMask.all(count: 2), values: [.text(project == 1 ? "member" : "other"), .integer(-1)]),
                    WireRecord(id: -2, present: FieldMask.all(count: 2), values: [.text("writer"), .integer(-1)]),
                ]),
            ])]
            let made = try await server.handle(SyncRequest(maxRevision: revision, changeSets: changeSets, limit: 1), identity: scoped ? admin : nil)
            let projectID = made.changeSets.last!.entities[0].records[0].id
            revision = made.maxRevision
            changeSets = stride(from: 0, to: perProject, by: 1_000).map { start in
                let ids = (start..<min(start + 1_000, perProject)).map { -Int64($0) - 1 }
                return ChangeSet(entities: [EntityChanges(entity: "tasks", create: ids, records: ids.map { id in
                    WireRecord(id: id, present: FieldMask.all(count: 5), values: [
                        .text("task \(project).\(-id)"), .text("notes for task \(-id) of project \(project), a line of text"),
                        .bool(id % 3 == 0), .integer(-id % 5), .integer(projectID),
                    ])
                })])
            }
            revision = try await server.handle(SyncRequest(maxRevision: revision, changeSets: changeSets, limit: 1), identity: scoped ? admin : nil).maxRevision
        }
        _ = probe.take()
        return server
    }

    struct Initial {
        var seconds: [Double]
        var bytes: Int
        var received: Int
        var requests: Int
        var phases: [[SyncPhase: Double]] = []
        var median: Double { FieldMergeToolSupport.median(seconds) }

        func line(step: String, records: Int) -> BenchLine {
            var line = BenchLine(step: step, records: records, seconds: median, runs: seconds.count, ops: received, opUnit: "records")
            line.add("seconds_all", seconds)
            line.add("bytes_on_wire", bytes)
            line.add("requests", requests)
            line.add("phases_ms", PhaseTotals.medians(phases, seconds: seconds))
            return line
        }
    }

    /// A fresh device of `user` downloads what it holds, ``runs`` times.
    func initialSyncs(_ server: RevisionServer, user: String, folder: String, name: String, probe: PhaseTotals) async throws -> Initial {
        var result = Initial(seconds: [], bytes: 0, received: 0, requests: 0)
        for run in 0..<runs {
            let client = SyncClient(
                store: try Store(.file(path: folder + "/\(name)-\(user)-\(run).sqlite"), schema: Self.schema, replica: ReplicaID(UInt64(100 + run))),
                transport: InProcessTransport(server: server, identity: SyncIdentity(user: user), probe: probe), batchSize: batchSize,
                probe: probe)
            var summary = SyncSummary()
            _ = probe.take()
            result.seconds.append(try await seconds { summary = try await client.sync() })
            result.phases.append(probe.take())
            let held = try await client.read { try $0.database.scalar("SELECT count(*) FROM tasks") }
            guard held == .integer(Int64(perProject)) else { throw ValidationError("\(user) holds \(String(describing: held)) tasks, expected \(perProject)") }
            (result.bytes, result.received, result.requests) = (summary.bytesReceived + summary.bytesSent, summary.received, summary.rounds)
        }
        _ = probe.take()
        return result
    }

    /// The writer edits ``changes`` tasks of project 1 (not timed); the member's device syncs
    /// them: its time, and the server's time for the request (catch-up, commit, encode).
    func incrementalSyncs(_ server: RevisionServer, folder: String, name: String, probe: PhaseTotals) async throws -> ([Double], [Double]) {
        let writer = SyncClient(
            store: try Store(.file(path: folder + "/writer-\(name).sqlite"), schema: Self.schema, replica: ReplicaID(2)),
            transport: InProcessTransport(server: server, identity: SyncIdentity(user: "member"), probe: probe), batchSize: batchSize)
        let reader = SyncClient(
            store: try Store(.file(path: folder + "/reader-\(name).sqlite"), schema: Self.schema, replica: ReplicaID(3)),
            transport: InProcessTransport(server: server, identity: SyncIdentity(user: "member"), probe: probe), batchSize: batchSize)
        _ = try await writer.sync()
        _ = try await reader.sync()
        let ids = try await writer.read { store in
            try store.database.rows("SELECT id FROM tasks ORDER BY id LIMIT ?", [.integer(Int64(changes))]).compactMap { row -> Int64? in
                if case .integer(let id)? = row.first { return id }
                return nil
            }
        }
        var times: [Double] = [], serverTimes: [Double] = []
        for run in 0..<runs {
            try await writer.write { store in
                for id in ids { _ = try store.update("tasks", id: id, ["title": .text("edit \(run) of \(id)")]) }
            }
            _ = try await writer.sync()
            await writer.checkpoint()
            _ = probe.take()
            var summary = SyncSummary()
            times.append(try await seconds { summary = try await reader.sync() })
            let phases = probe.take()
            serverTimes.append([.serverDecode, .catchUp, .serverCommit, .responseEncode].reduce(0) { $0 + (phases[$1] ?? 0) })
            guard summary.received >= changes else { throw ValidationError("the member received \(summary.received) records, expected \(changes)") }
        }
        return (times, serverTimes)
    }

    /// A device of a user in no project holds nothing; a membership of project 2 is added;
    /// its next sync receives that project's tasks, however old.
    func join(_ server: RevisionServer, folder: String, probe: PhaseTotals) async throws {
        var times: [Double] = []
        var received = 0
        for run in 0..<runs {
            let user = "joiner-\(run)"
            let client = SyncClient(
                store: try Store(.file(path: folder + "/\(user).sqlite"), schema: Self.schema, replica: ReplicaID(UInt64(200 + run))),
                transport: InProcessTransport(server: server, identity: SyncIdentity(user: user)), batchSize: batchSize)
            _ = try await client.sync()
            let revision = await server.maxRevision
            _ = try await server.handle(SyncRequest(maxRevision: revision, changeSets: [ChangeSet(entities: [
                EntityChanges(entity: "memberships", create: [-1], records: [WireRecord(id: -1, present: FieldMask.all(count: 2), values: [.text(user), .integer(2)])]),
            ])], limit: 1), identity: SyncIdentity(user: "writer"))
            var summary = SyncSummary()
            times.append(try await seconds { summary = try await client.sync() })
            received = summary.received
            let held = try await client.read { try $0.database.scalar("SELECT count(*) FROM tasks") }
            guard held == .integer(Int64(perProject)) else { throw ValidationError("the joiner holds \(String(describing: held)) tasks, expected \(perProject)") }
        }
        _ = probe.take()
        var line = BenchLine(step: "scopes-join", records: records, seconds: median(times), runs: runs, ops: received, opUnit: "records")
        line.add("seconds_all", times)
        print(line.render())
    }
}
