import FieldMerge
import FieldMergeProtocol

extension ScopedSimulation {
    /// A write outside the scope, sent on purpose as a device of `device`'s user would if it
    /// named a record it does not hold: an update or delete of a task under a project the
    /// user does not hold (at the task's current revision, or half the time an older one, as
    /// a device that held it once would send), or a comment created under it. The server must
    /// refuse it (`unauthorized`, Specs/scopes.md §4), change nothing, and tell nothing of the
    /// task (the watch reads the answer like any other).
    func probe(_ device: Device) async throws {
        let before = try await serverState()
        let user = user(of: device)
        guard let grants = before.grants(user: user, roles: directory.roles(of: user)) else { return }
        let outside = before.ids("tasks").filter { id in before.root("tasks", id).map { !grants.contains($0) } ?? false }
        guard !outside.isEmpty else { return }
        let task = outside[random.below(outside.count)]
        let revision = before.revisions["tasks#\(task)"]
        let stale = options.staleProbes && random.below(2) == 0 && (revision ?? 0) > 1
        let sentRevision = stale ? revision.map { $0 - 1 } : revision
        let width = TeamSchema.schema.entities.first { $0.name == "tasks" }!.fields.count
        let nulls = ContiguousArray<Value>(repeating: .null, count: width)
        var values = nulls
        values[TeamSchema.Tasks.title] = .text("probe")
        let (changes, sentID, kind): (EntityChanges, Int64, String) = switch random.below(3) {
        case 0: (EntityChanges(entity: "tasks", update: [task], records: [
            WireRecord(id: task, present: FieldMask([TeamSchema.Tasks.title]), values: values, revision: sentRevision)]), task, "update of tasks#\(task)")
        case 1: (EntityChanges(entity: "tasks", delete: [task], records: [
            WireRecord(id: task, present: FieldMask(), values: nulls, revision: sentRevision)]), task, "delete of tasks#\(task)")
        default: (EntityChanges(entity: "comments", create: [-1], records: [
            WireRecord(id: -1, present: FieldMask.all(count: 3), values: [.integer(task), .text("probe"), .integer(0)])]), -1,
            "comment created under tasks#\(task)")
        }
        report.probes += 1
        let request = SyncRequest(
            maxRevision: before.maxRevision, changeSets: [ChangeSet(entities: [changes])], clientID: probeClient(device.index),
            requestID: "probe-\(report.probes)", scopes: ScopeHoldings(["project": .ids(grants)]))
        let codec = WireCodec(schema: TeamSchema.schema)
        let transport = WatchedTransport(deviceServers[device.index], device: device.index, watch: watch)
        let answer = try await transport.send(Gzip.compress(codec.encode(request)), gzip: true)
        let response = try codec.decodeResponse(Gzip.decompressIfGzip(answer, limit: WireLimits().maxDecompressedBytes))
        let refused = response.changeSets.first?.refused.contains { $0.code == "unauthorized" && $0.id == sentID } == true
        let after = try await serverState()
        let name = "device \(device.index) (\(user))'s \(kind)\(stale && sentID > 0 ? " at an older revision" : "") under project \(before.root("tasks", task) ?? 0)"
        if refused { report.probesRefused += 1 } else { violations.add("probe: \(name) was not refused as unauthorized") }
        let commentsBefore = before.rows["comments"]?.count ?? 0, commentsAfter = after.rows["comments"]?.count ?? 0
        if after.revisions["tasks#\(task)"] != revision || commentsAfter != commentsBefore {
            violations.add("probe: \(name) changed the server's data")
        }
    }
}
