import FieldMerge
import FieldMergeSQLite
import Synchronization
import Testing

/// The snippets of the `///` comments on `RecordQuery` and `Store.observe`/`changes(of:)`,
/// between `// <file> block begin` and `… end` (``DocSnippets/docComments`` checks that they
/// are the comments' code, line for line).
@Suite struct DocCommentQueryTests {
    enum Status: String, Sendable { case open, blocked, done }

    struct Note: StoredRecord, Sendable {
        var id: Int64 = 0
        var title = ""
        var severity: Int64 = 0
        var status: Status = .open
        static let table = RecordTable<Note>("notes", [
            .text("title", \.title), .integer("severity", \.severity), .text("status", \.status),
        ])
    }

    func store() throws -> Store {
        let store = try Store(.memory, schema: Schema([Note.table.entity]))
        for (title, severity, status) in [("Milk", 1, Status.open), ("Roof", 5, .blocked), ("", 4, .open), ("Bills", 3, .done)] {
            var note = Note(title: title, severity: Int64(severity), status: status)
            try store.insert(&note)
        }
        return store
    }

    @Test func recordQuerySnippet_selectsCountsAndNames() throws {
        let store = try store()
        // RecordQuery.swift block begin
        let urgent = try store.fetchAll(Note.all.filter(\.severity >= 3 && \.title != "").order(\.title).limit(20))
        let open = try store.fetchCount(Note.all.filter(.in(\.status, [.open, .blocked])))
        let named = try store.fetchAll(Note.all.filter(Note.field("title") == "Milk"))
        // RecordQuery.swift block end
        #expect(urgent.map(\.title) == ["Bills", "Roof"])
        #expect(open == 3)
        #expect(named.map(\.severity) == [1])
    }

    @Test(.timeLimit(.minutes(1))) func observationSnippets_hearTheNextInsert() async throws {
        let store = try store()
        let (reloads, reloaded) = AsyncStream.makeStream(of: [Int64].self)
        let reload: @Sendable ([Int64]) -> Void = { reloaded.yield($0) }
        let (shown, shows) = AsyncStream.makeStream(of: [String].self)
        let show: @Sendable ([Note]) -> Void = { shows.yield($0.map(\.title)) }
        // Store+Observation.swift block begin
        let feed = store.changes(of: Note.self)
        Task { for await change in feed { reload(change.inserted + change.updated) } }
        // Store+Observation.swift block end
        // Store+Observation.swift block begin
        let urgent = try store.observe(Note.all.filter(\.severity >= 3).order(\.title))
        Task { for try await notes in urgent { show(notes) } }   // now, then after each change
        // Store+Observation.swift block end
        var note = Note(title: "Fire", severity: 9)
        try store.insert(&note)
        var reloadsSeen = reloads.makeAsyncIterator()
        let first = await reloadsSeen.next()
        #expect(first == [note.id])
        var shownSeen = shown.makeAsyncIterator()
        let now = await shownSeen.next()
        let after = await shownSeen.next()
        #expect(now == ["", "Bills", "Roof"])
        #expect(after == ["", "Bills", "Fire", "Roof"])
    }
}
