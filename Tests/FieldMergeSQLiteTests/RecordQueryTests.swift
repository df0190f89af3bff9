import FieldMerge
import FieldMergeSQLite
import Testing

enum TicketStatus: String, Sendable { case open, blocked, done }
enum TicketLevel: Int8, Sendable { case low = 1, high = 2 }

/// The record type of the query tests; `lists` is another table for the live-query tests.
struct Ticket: StoredRecord, Equatable, Sendable {
    var id: Int64 = 0
    var title = ""
    var severity: Int64 = 0
    var body: String?
    var status: TicketStatus = .open
    var level: TicketLevel = .low
    var resolution: TicketStatus?
    /// Not a column: queries cannot name it.
    var shout: String { title.uppercased() }

    static let table = RecordTable<Ticket>("tickets", [
        .text("title", \.title),
        .integer("severity", \.severity),
        .text("body", \.body),
        .text("status", \.status, default: .open),
        .integer("level", \.level),
        .text("resolution", \.resolution),
    ])
}

func ticketStore() throws -> Store {
    try Store(.memory, schema: Schema([TodoList.table.entity, Ticket.table.entity]), replica: ReplicaID(1),
              wall: ManualWallClock(milliseconds: 1_000))
}

/// Five tickets, severities 1...5, titles "a"..."e"; "b" and "d" have a body.
func fiveTickets(_ store: Store) throws {
    for (index, title) in ["c", "a", "e", "b", "d"].enumerated() {
        let severity = Int64(["c": 3, "a": 1, "e": 5, "b": 2, "d": 4][title]!)
        var ticket = Ticket(title: title, severity: severity, body: title == "b" || title == "d" ? "body \(title)" : nil,
                            status: index % 2 == 0 ? .open : .blocked)
        try store.insert(&ticket)
    }
}

@Suite struct RecordQueryTests {
    func titles(_ store: Store, _ query: RecordQuery<Ticket>) throws -> [String] {
        try store.fetchAll(query.order(\.title)).map(\.title)
    }

    @Test func eachComparison_selectsWhatItSays() throws {
        let store = try ticketStore()
        try fiveTickets(store)
        #expect(try titles(store, Ticket.all.filter(\.severity == 3)) == ["c"])
        #expect(try titles(store, Ticket.all.filter(\.severity != 3)) == ["a", "b", "d", "e"])
        #expect(try titles(store, Ticket.all.filter(\.severity < 3)) == ["a", "b"])
        #expect(try titles(store, Ticket.all.filter(\.severity <= 3)) == ["a", "b", "c"])
        #expect(try titles(store, Ticket.all.filter(\.severity > 3)) == ["d", "e"])
        #expect(try titles(store, Ticket.all.filter(\.severity >= 3)) == ["c", "d", "e"])
        #expect(try titles(store, Ticket.all.filter(\.title > "c")) == ["d", "e"])
        // By field name, with a Value.
        #expect(try titles(store, Ticket.all.filter(Ticket.field("severity") >= 4)) == ["d", "e"])
        #expect(try titles(store, Ticket.all.filter(Ticket.field("title") == "a")) == ["a"])
        #expect(try titles(store, Ticket.all.filter(Ticket.field("title") != "a")) == ["b", "c", "d", "e"])
        #expect(try titles(store, Ticket.all.filter(Ticket.field("severity") < 2)) == ["a"])
        #expect(try titles(store, Ticket.all.filter(Ticket.field("severity") <= 2)) == ["a", "b"])
        #expect(try titles(store, Ticket.all.filter(Ticket.field("severity") > 4)) == ["e"])
    }

    @Test func nullAndIn_selectWhatTheySay() throws {
        let store = try ticketStore()
        try fiveTickets(store)
        #expect(try titles(store, Ticket.all.filter(.isNull(\.body))) == ["a", "c", "e"])
        #expect(try titles(store, Ticket.all.filter(\.body == nil)) == ["a", "c", "e"])
        #expect(try titles(store, Ticket.all.filter(\.body != nil)) == ["b", "d"])
        #expect(try titles(store, Ticket.all.filter(.isNull(Ticket.field("body")))) == ["a", "c", "e"])
        #expect(try titles(store, Ticket.all.filter(.in(\.severity, [1, 4, 9]))) == ["a", "d"])
        #expect(try titles(store, Ticket.all.filter(.in(Ticket.field("title"), ["e", "b"]))) == ["b", "e"])
        #expect(try titles(store, Ticket.all.filter(.in(\.severity, [Int64]()))).isEmpty)
        let ids = try store.fetchAll(Ticket.all.filter(\.title == "c")).map(\.id)
        #expect(try titles(store, Ticket.all.filter(\.id == ids[0])) == ["c"])
        #expect(try titles(store, Ticket.all.filter(.in(\.id, ids + [999]))) == ["c"])
    }

    @Test func andOrNot_combine() throws {
        let store = try ticketStore()
        try fiveTickets(store)
        #expect(try titles(store, Ticket.all.filter(\.severity >= 2 && \.severity <= 4)) == ["b", "c", "d"])
        #expect(try titles(store, Ticket.all.filter(\.severity == 1 || \.title == "e")) == ["a", "e"])
        #expect(try titles(store, Ticket.all.filter(!(\.severity == 1 || \.title == "e"))) == ["b", "c", "d"])
        #expect(try titles(store, Ticket.all.filter((\.severity > 1 && \.body != nil) || \.title == "a")) == ["a", "b", "d"])
        // Two filters: both must match.
        #expect(try titles(store, Ticket.all.filter(\.severity > 1).filter(\.status == .open)) == ["c", "d", "e"])
        // NOT of a null test.
        #expect(try titles(store, Ticket.all.filter(!QueryFilter<Ticket>.isNull(\.body))) == ["b", "d"])
    }

    @Test func orderLimitOffsetOneAndCount() throws {
        let store = try ticketStore()
        try fiveTickets(store)
        #expect(try store.fetchAll(Ticket.all.order(\.severity, .descending)).map(\.title) == ["e", "d", "c", "b", "a"])
        #expect(try store.fetchAll(Ticket.all.order("title")).map(\.title) == ["a", "b", "c", "d", "e"])
        // Two keys: status first (blocked < open), then severity descending.
        let byStatus = try store.fetchAll(Ticket.all.order(\.status).order(\.severity, .descending)).map(\.title)
        #expect(byStatus == ["b", "a", "e", "d", "c"])
        // No order: by id, as fetchAll(Ticket.self) gives them (temporary ids -1, -2, ...).
        #expect(try store.fetchAll(Ticket.all).map(\.title) == ["c", "a", "e", "b", "d"])
        #expect(try store.fetchAll(Ticket.all).map(\.title) == store.fetchAll(Ticket.self).map(\.title))
        #expect(try store.fetchAll(Ticket.all.order(\.title).limit(2)).map(\.title) == ["a", "b"])
        #expect(try store.fetchAll(Ticket.all.order(\.title).limit(2, offset: 3)).map(\.title) == ["d", "e"])
        #expect(try store.fetchOne(Ticket.all.order(\.severity, .descending))?.title == "e")
        #expect(try store.fetchOne(Ticket.all.filter(\.severity > 10)) == nil)
        #expect(try store.fetchCount(Ticket.all) == 5)
        #expect(try store.fetchCount(Ticket.all.filter(\.severity >= 2)) == 4)
        #expect(try store.fetchCount(Ticket.all.limit(3)) == 3)
        #expect(try store.fetchCount(Ticket.all.limit(3, offset: 4)) == 1)
    }

    @Test func deletedRecords_areNeverSelected() throws {
        let store = try ticketStore()
        try fiveTickets(store)
        let c = try #require(try store.fetchOne(Ticket.all.filter(\.title == "c")))
        try store.delete(c)
        #expect(try store.fetchAll(Ticket.all.filter(\.severity >= 3)).map(\.title).sorted() == ["d", "e"])
        #expect(try store.fetchCount(Ticket.all) == 4)
        #expect(try store.fetchOne(Ticket.all.filter(\.title == "c")) == nil)
    }

    @Test func aHostileValue_isBoundAndMatchedVerbatim() throws {
        let store = try ticketStore()
        try fiveTickets(store)
        let hostile = "x'); DROP TABLE tickets; --"
        var ticket = Ticket(title: hostile, severity: 9)
        try store.insert(&ticket)
        #expect(try store.fetchAll(Ticket.all.filter(\.title == hostile)).map(\.id) == [ticket.id])
        #expect(try store.fetchAll(Ticket.all.filter(Ticket.field("title") == .text(hostile))).map(\.title) == [hostile])
        #expect(try store.fetchCount(Ticket.all.filter(.in(\.title, [hostile, "a"]))) == 2)
        #expect(try store.fetchCount(Ticket.all.filter(\.title == "x")) == 0)
        #expect(try store.fetchCount(Ticket.all) == 6)  // the table is still there, with every row
    }

    @Test func unknownColumnsAndBadValues_areClearErrors() throws {
        let store = try ticketStore()
        try fiveTickets(store)
        let unknown = #expect(throws: StoreError.self) { try store.fetchAll(Ticket.all.filter(Ticket.field("nope") == 1)) }
        #expect(unknown?.code == .unknownField && unknown?.message.contains("'nope'") == true)
        let unmapped = #expect(throws: StoreError.self) { try store.fetchAll(Ticket.all.filter(\.shout == "A")) }
        #expect(unmapped?.code == .unknownField)
        let order = #expect(throws: StoreError.self) { try store.fetchAll(Ticket.all.order("nope")) }
        #expect(order?.code == .unknownField)
        let kind = #expect(throws: StoreError.self) { try store.fetchCount(Ticket.all.filter(Ticket.field("severity") == "high")) }
        #expect(kind?.code == .invalidArgument)
        let nullOrder = #expect(throws: StoreError.self) { try store.fetchAll(Ticket.all.filter(\.body < nil)) }
        #expect(nullOrder?.code == .invalidArgument)
        let negative = #expect(throws: StoreError.self) { try store.fetchAll(Ticket.all.limit(-1)) }
        #expect(negative?.code == .invalidArgument)
    }
}
