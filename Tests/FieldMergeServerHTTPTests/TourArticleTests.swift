import FieldMerge
import FieldMergeSQLite
import FieldMergeServer
import FieldMergeServerSQLite
import FieldMergeSync
import FieldMergeSyncHTTP
import Foundation
import Testing

/// The Swift snippets of the DocC article "A tour of the layers"
/// (`Sources/FieldMergeSync/Documentation.docc/Tour.md`), run in order in one scope, as a
/// reader would paste them.
///
/// Each ```swift block of the article appears below between `// Tour block begin` and
/// `// Tour block end`, verbatim apart from its indentation; its `import` lines are this
/// file's imports. ``DocSnippets`` reads the article and this file and fails on any
/// difference, so changing a snippet means changing its copy here (and the checks after it).
/// Lines outside the markers are the test's own. The store snippet writes `replica.sqlite`
/// in the working folder, as an app would; the test removes it.
@Suite(.serialized) struct TourArticleTests {
    @Test func tourSnippets_runInOrder() async throws {
        Self.removeReplicaFiles()
        defer { Self.removeReplicaFiles() }

        // Tour block begin
        let tasks = Entity("tasks", fields: [
            Field("title", .text),                                 // lastEditWins, the default
            Field("notes", .text, strategy: .text),                // line-based three-way merge
            Field("done", .bool),
            Field("minutesSpent", .integer, strategy: .counter),   // concurrent increments both count
            Field("tags", .textSet, strategy: .union),             // additions and removals of both sides
            Field("completedAt", .date),
        ])
        let schema = try Schema([tasks])                           // validated: names, types, strategies

        var clock = HybridClock(replica: ReplicaID(0xA11CE))
        let ancestor = Record(tasks, id: 42, values: ["Write spec", "", false, 30, .textSet(["docs"]), nil],
                              stamp: Stamp(milliseconds: 1_700_000_000_000, replica: ReplicaID(1)))
        var local = ancestor
        local.set(3, 45, stamp: clock.now())                       // +15 minutes here
        var remote = ancestor
        remote.set(3, 40, stamp: Stamp(milliseconds: 1_700_000_100_000, replica: ReplicaID(0xB0B)))  // +10 there
        remote.set(2, true, stamp: Stamp(milliseconds: 1_700_000_100_000, replica: ReplicaID(0xB0B)))

        let result = try ThreeWayMerge.merge(tasks, ancestor: ancestor, local: local, remote: remote,
                                             context: MergeContext(resolutionStamp: clock.now()))
        let minutes = result.merged.values[3]   // 55: 30 + 15 + 10
        let done = result.merged.values[2]      // true: only the remote side changed it
        let upload = result.upload              // [3]: the sum goes to the server
        let reports = result.conflicts          // one report: minutesSpent, counter, winner .merged
        // Tour block end
        #expect(schema.entity("tasks") != nil)
        #expect(minutes == 55)
        #expect(done == true)
        #expect(upload == FieldMask([3]))
        #expect(reports.count == 1)
        #expect(reports.first?.field == "minutesSpent" && reports.first?.winner == .merged)

        // Tour block begin
        let longestTitle = FieldStrategy.custom("longestTitle") { input in
            guard case .text(let l) = input.local, case .text(let r) = input.remote else { return input.lastEdit }
            return l.count == r.count ? input.lastEdit : (l.count > r.count ? input.local : input.remote)
        }
        let doneHasDate = ClosureRecordStrategy(name: "doneHasDate") { input in
            var input = input                                      // proposal: what the field strategies chose
            if input[proposal: "done"] == true, input[proposal: "completedAt"] == .null {
                input[proposal: "completedAt"] = .date(1_700_000_000_000)
            }
            return input.proposal
        }
        // Tour block end
        let ruled = Entity("tasks", fields: [
            Field("title", .text, strategy: longestTitle), Field("notes", .text), Field("done", .bool),
            Field("minutes", .integer), Field("tags", .textSet), Field("completedAt", .date),
        ], recordStrategy: doneHasDate)
        _ = try Schema([ruled])
        let base = Record(ruled, id: 1, values: ["a", "", false, 0, .textSet([]), nil],
                          stamp: Stamp(clock: 100, replica: ReplicaID(1)))
        var mine = base, theirs = base
        mine.set(0, "a much longer title", stamp: Stamp(clock: 200, replica: ReplicaID(1)))
        theirs.set(0, "short", stamp: Stamp(clock: 300, replica: ReplicaID(2)))
        theirs.set(2, true, stamp: Stamp(clock: 300, replica: ReplicaID(2)))
        let ruledResult = try ThreeWayMerge.merge(ruled, ancestor: base, local: mine, remote: theirs)
        #expect(ruledResult.merged.values[0] == "a much longer title")
        #expect(ruledResult.merged.values[5] == .date(1_700_000_000_000))
        #expect(ruledResult.conflicts.map(\.kind) == [.field, .recordRule])

        // Tour block begin
        struct TodoList: StoredRecord {
            var id: Int64 = 0
            var name = ""
            static let table = RecordTable<TodoList>("lists", [.text("name", \.name)])
        }

        struct Reminder: StoredRecord {
            var id: Int64 = 0
            var title = ""
            var isDone = false
            var listID: Int64?
            static let table = RecordTable<Reminder>("reminders", [
                .text("title", \.title),
                .bool("isDone", \.isDone),
                .reference("listID", \.listID, to: "lists", onDelete: .cascade),
            ])
        }

        let appSchema = try Schema([TodoList.table.entity, Reminder.table.entity])
        let store = try Store(.file(path: "replica.sqlite"), schema: appSchema)
        var list = TodoList(name: "Home")
        try store.insert(&list)                // id -1: temporary until the server assigns one
        var reminder = Reminder(title: "Milk", listID: list.id)
        try store.insert(&reminder)            // id -2, its listID the list's -1
        reminder.isDone = true
        try store.save(reminder)               // stamps and queues isDone only
        let pending = try store.pendingChanges()   // two creates, each with every field, coalesced
        // Tour block end
        #expect(list.id == -1 && reminder.id == -2 && reminder.listID == -1)
        #expect(pending.count == 2 && pending.allSatisfy { $0.kind == .create })

        // Tour block begin
        let milk = try store.fetchOne(Reminder.all.filter(\.title == "Milk" && \.listID == list.id))
        let doneCount = try store.fetchCount(Reminder.all.filter(\.isDone == true))          // 1
        let open = try store.observe(Reminder.all.filter(\.isDone == false).order(\.title))  // now, then after each change
        // Tour block end
        #expect(milk?.id == reminder.id && milk?.isDone == true)
        #expect(doneCount == 1)
        var openNow = open.makeAsyncIterator()
        let noneOpen = try await openNow.next()
        #expect(noneOpen?.isEmpty == true)

        // Tour block begin
        let server = InProcessTransport(server: try RevisionServer(.memory, schema: appSchema))
        let client = SyncClient(store: store, transport: server)
        var summary = SyncSummary()
        do {
            try await client.write { store in      // one transaction: a throw in it leaves nothing
                var work = TodoList(name: "Work")
                try store.insert(&work)
                var call = Reminder(title: "Call Ann", listID: work.id)
                try store.insert(&call)
            }                                      // one change event for the block
            summary = try await client.sync()      // rounds, records sent/received/merged, conflicts, bytes
        } catch where error.isRetryable {
            // offline: the changes stay queued; sync again later
        }
        let names = try await client.read { store in try store.database.rows("SELECT name FROM lists") }
        // Tour block end
        #expect(summary.sent == 4)
        #expect(names.count == 2)
        let callAnn = try await openNow.next()   // the live query heard the client's write
        #expect(callAnn?.map(\.title) == ["Call Ann"])

        @Sendable func reload(_ ids: [Int64]) {}
        // Tour block begin
        let feed = Task {
            for await change in await client.changes() {
                if let ids = change.updated["reminders"] { reload(ids) }   // your UI
            }
        }
        let stuck = try await client.write { try $0.unsyncedChanges().filter { $0.refusal != nil } }
        // Tour block end
        #expect(stuck.isEmpty)
        feed.cancel()

        // Tour block begin
        let overHTTP = HTTPTransport(url: URL(string: "http://127.0.0.1:8080/sync")!)
        // SyncClient(store: store, transport: overHTTP), against a server with the app's schema
        // Tour block end
        _ = overHTTP

        // Tour block begin
        let events = HTTPLiveChannel(syncURL: URL(string: "http://127.0.0.1:8080/sync")!)  // an HTTP server's channel
        let outcomes = await client.startLive(over: server)  // here the in-process server (a channel too)
        for await outcome in outcomes {          // connected, applied (pushed changes), synced, syncFailed, disconnected
            if case .connected(let revision) = outcome { print("live at revision \(revision)"); break }
        }
        await client.stopLive()                  // in the background; startLive again in front
        // Tour block end
        _ = events
        #expect(await !client.isLive)
    }

    static func removeReplicaFiles() {
        for suffix in ["", "-wal", "-shm"] {
            try? FileManager.default.removeItem(atPath: FileManager.default.currentDirectoryPath + "/replica.sqlite" + suffix)
        }
    }
}
