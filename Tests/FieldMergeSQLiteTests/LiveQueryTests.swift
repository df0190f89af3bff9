import FieldMerge
@testable import FieldMergeSQLite
import Foundation
import Observation
import Synchronization
import Testing

/// `Store.observe(_:)`, `Store.changes(of:)` and `LiveQuery`.
@Suite(.timeLimit(.minutes(1))) struct LiveQueryTests {
    /// Waits (up to 5 s) for `condition`, letting other tasks run.
    nonisolated(nonsending) func eventually(_ condition: () -> Bool) async -> Bool {
        for _ in 0..<500 {
            if condition() { return true }
            try? await Task.sleep(for: .milliseconds(10))
        }
        return condition()
    }

    @Test func observe_yieldsNow_thenAfterWritesToItsTableOnly() async throws {
        let store = try ticketStore()
        try fiveTickets(store)
        var iterator = try store.observe(Ticket.all.filter(\.severity >= 4).order(\.title)).makeAsyncIterator()
        let first = try await iterator.next()
        #expect(first?.map(\.title) == ["d", "e"])
        // Another table: no refresh (the buffer is unbounded, so one would be the next element).
        var list = TodoList(name: "Home")
        try store.insert(&list)
        var high = Ticket(title: "f", severity: 6)
        try store.insert(&high)
        let second = try await iterator.next()
        #expect(second?.map(\.title) == ["d", "e", "f"])
        // A transaction of several writes: one refresh.
        try store.transaction {
            try store.delete(high)
            var other = Ticket(title: "g", severity: 7)
            try store.insert(&other)
        }
        let third = try await iterator.next()
        #expect(third?.map(\.title) == ["d", "e", "g"])
        // A rolled-back transaction: nothing.
        _ = try? store.transaction { () throws -> Void in
            var lost = Ticket(title: "lost", severity: 9)
            try store.insert(&lost)
            throw CancellationError()
        }
        // Plain SQL through the store's connection, taken in by the store: a refresh.
        try store.database.run("UPDATE tickets SET severity = 1 WHERE title = 'd'")
        try store.captureExternalWrites()
        let fourth = try await iterator.next()
        #expect(fourth?.map(\.title) == ["e", "g"])
    }

    @Test func observe_refreshesAfterAnAppliedSync() async throws {
        let store = try ticketStore()
        var iterator = try store.observe(Ticket.all.order(\.title)).makeAsyncIterator()
        let empty = try await iterator.next()
        #expect(empty == [])
        let fields = Ticket.table.entity.fields.count
        let received = Record(entity: "tickets", id: 40, values: ["from server", 5, nil, "open", 1, nil],
                              stamps: ContiguousArray(repeating: Stamp(clock: 10, replica: ReplicaID(2)), count: fields))
        try store.apply(ServerChanges(records: [AcknowledgedRecord(received, revision: 1)], maxRevision: 1))
        let synced = try await iterator.next()
        #expect(synced?.map(\.title) == ["from server"] && synced?.first?.id == 40)
    }

    @Test func observe_seesPlainSQLFromAnotherConnection_onceTheStoreTakesItIn() async throws {
        let folder = TemporaryFolder()
        defer { folder.remove() }
        let path = folder.file("live.sqlite")
        let store = try Store(.file(path: path), schema: Schema([TodoList.table.entity, Ticket.table.entity]), replica: ReplicaID(1))
        defer { store.close() }
        var iterator = try store.observe(Ticket.all).makeAsyncIterator()
        let empty = try await iterator.next()
        #expect(empty == [])
        let other = try Database(.file(path: path))
        try other.run("INSERT INTO tickets (title, severity, status, level) VALUES ('elsewhere', 2, 'open', 1)")
        other.close()
        try store.captureExternalWrites()
        let taken = try await iterator.next()
        #expect(taken?.map(\.title) == ["elsewhere"])
    }

    @Test func cancellingTheIteratingTask_endsTheQuery_andReleasesItsListener() async throws {
        let store = try ticketStore()
        let values = try store.observe(Ticket.all)
        let changes = store.changes(of: Ticket.self)
        #expect(store.listenerCount == 2)
        let (started, start) = AsyncStream.makeStream(of: Void.self)
        let reader = Task {
            var count = 0
            for try await _ in values {
                count += 1
                start.yield()
            }
            return count
        }
        let changeReader = Task {
            var count = 0
            for await _ in changes { count += 1 }
            return count
        }
        for await _ in started { break }  // the reader has the first result
        reader.cancel()
        changeReader.cancel()
        let released = await eventually { store.listenerCount == 0 }
        #expect(released)
        let seen = try await reader.value
        let changesSeen = await changeReader.value
        #expect(seen == 1 && changesSeen == 0)  // the first result only; it ended
        var ticket = Ticket(title: "after")
        try store.insert(&ticket)  // nobody listens: nothing to call
        #expect(store.listenerCount == 0)
    }

    @Test func changesOf_aType_hearsOnlyItsRecords() async throws {
        let store = try ticketStore()
        var changes = store.changes(of: Ticket.self).makeAsyncIterator()
        var list = TodoList(name: "Home")
        try store.insert(&list)
        var ticket = Ticket(title: "t")
        try store.insert(&ticket)
        let inserted = await changes.next()
        #expect(inserted?.inserted == [ticket.id] && inserted?.updated == [] && inserted?.origin == .local)
        ticket.severity = 3
        try store.save(ticket)
        let updated = await changes.next()
        #expect(updated?.updated == [ticket.id] && updated?.inserted == [])
        try store.delete(ticket)
        let deleted = await changes.next()
        #expect(deleted?.deleted == [ticket.id])
        #expect(RecordChange<Ticket>(StoreChange(origin: .local)) == nil)
    }

    @MainActor @Test func liveQuery_isObservable_andFollowsTheStore() async throws {
        let store = try ticketStore()
        try fiveTickets(store)
        let live = try LiveQuery(store, Ticket.all.filter(\.severity >= 5))
        #expect(live.rows.map(\.title) == ["e"])  // at once
        let notified = Mutex(false)
        withObservationTracking { _ = live.rows } onChange: { notified.withLock { $0 = true } }
        var ticket = Ticket(title: "z", severity: 8)
        try store.insert(&ticket)
        let refreshed = await eventually { live.rows.map(\.title) == ["e", "z"] }
        #expect(refreshed && notified.withLock { $0 })
        live.cancel()
        try await Task.sleep(for: .milliseconds(20))
        let released = await eventually { store.listenerCount == 0 }
        #expect(released)
        var later = Ticket(title: "later", severity: 9)
        try store.insert(&later)
        try await Task.sleep(for: .milliseconds(20))
        #expect(live.rows.map(\.title) == ["e", "z"])
    }
}
