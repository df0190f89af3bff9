import FieldMerge
import FieldMergeSQLite
import Testing

/// `Column`'s `default:`, `renamedFrom:` and `RawRepresentable` columns.
@Suite struct ColumnOptionsTests {
    @Test func enumColumns_roundTripAndFilterByCase() throws {
        let store = try ticketStore()
        var ticket = Ticket(title: "t", status: .blocked, level: .high, resolution: .done)
        try store.insert(&ticket)
        var other = Ticket(title: "u")
        try store.insert(&other)
        #expect(try store.fetch(Ticket.self, id: ticket.id) == ticket)
        #expect(try store.fetch(Ticket.self, id: other.id)?.resolution == nil)
        // Stored as the raw values.
        #expect(try store.database.rows("SELECT status, level, resolution FROM tickets WHERE id = ?", [.integer(ticket.id)])
                == [[.text("blocked"), .integer(2), .text("done")]])
        #expect(try store.fetchAll(Ticket.all.filter(\.status == .blocked)).map(\.id) == [ticket.id])
        #expect(try store.fetchAll(Ticket.all.filter(\.level == .low)).map(\.id) == [other.id])
        #expect(try store.fetchAll(Ticket.all.filter(.in(\.status, [.open, .done]))).map(\.id) == [other.id])
        #expect(try store.fetchAll(Ticket.all.filter(\.resolution == nil)).map(\.id) == [other.id])
        ticket.status = .done
        #expect(try store.save(ticket) == FieldMask([3]))
        #expect(try store.fetch(Ticket.self, id: ticket.id)?.status == .done)
    }

    @Test func aStoredValueNoCaseHas_isAClearInvalidRecord() throws {
        let store = try ticketStore()
        var ticket = Ticket(title: "t")
        try store.insert(&ticket)
        try store.database.run("UPDATE tickets SET status = 'archived' WHERE id = ?", [.integer(ticket.id)])
        let text = #expect(throws: StoreError.self) { try store.fetch(Ticket.self, id: ticket.id) }
        #expect(text?.code == .invalidRecord)
        #expect(text?.message.contains("'archived', which is not a raw value of TicketStatus") == true)
        try store.database.run("UPDATE tickets SET status = 'open', level = 7 WHERE id = ?", [.integer(ticket.id)])
        let integer = #expect(throws: StoreError.self) { try store.fetchAll(Ticket.all) }
        #expect(integer?.code == .invalidRecord && integer?.message.contains("7, which is not a raw value of TicketLevel") == true)
        try store.database.run("UPDATE tickets SET level = 300 WHERE id = ?", [.integer(ticket.id)])  // beyond Int8
        let wide = #expect(throws: StoreError.self) { try store.fetchAll(Ticket.all) }
        #expect(wide?.code == .invalidRecord)
    }

    @Test func defaultAndRenamedFrom_areTheFields() {
        let fields = Ticket.table.entity.fields
        #expect(fields[3].defaultValue == .text("open"))
        #expect(fields[0].defaultValue == .null && fields[0].renamedFrom == nil)
        let renamed = Column<Ticket>.text("heading", \.title, default: "untitled", renamedFrom: "title")
        #expect(renamed.field.renamedFrom == "title" && renamed.field.defaultValue == .text("untitled"))
        #expect(Column<Ticket>.integer("level", \.level, default: .high).field.defaultValue == .integer(2))
        #expect(Column<Ticket>.bool("flag", \.isFlag, default: true).field.defaultValue == .bool(true))
    }

    struct NoteV1: StoredRecord {
        var id: Int64 = 0
        var heading = ""
        static let table = RecordTable<NoteV1>("notes", [.text("heading", \.heading)])
    }

    struct NoteV2: StoredRecord, Equatable {
        var id: Int64 = 0
        var title = ""
        var status: TicketStatus = .open
        var pinned = false
        static let table = RecordTable<NoteV2>("notes", [
            .text("title", \.title, renamedFrom: "heading"),
            .text("status", \.status, default: .blocked),
            .bool("pinned", \.pinned, default: true),
        ])
    }

    @Test func aNewVersion_renamesAndAddsFieldsWithTheirDefaults() throws {
        let folder = TemporaryFolder()
        defer { folder.remove() }
        let path = folder.file("notes.sqlite")
        var note = NoteV1(heading: "Keep me")
        do {
            let store = try Store(.file(path: path), schema: Schema([NoteV1.table.entity]), replica: ReplicaID(1))
            try store.insert(&note)
            store.close()
        }
        let store = try Store(.file(path: path), schema: Schema([NoteV2.table.entity], version: 2), replica: ReplicaID(1))
        #expect(store.migrations.map { "\($0)" }.contains("rename field notes.heading to title"))
        #expect(try store.fetch(NoteV2.self, id: note.id) == NoteV2(id: note.id, title: "Keep me", status: .blocked, pinned: true))
        store.close()
    }
}

extension Ticket {
    var isFlag: Bool {
        get { severity > 0 }
        set { severity = newValue ? 1 : 0 }
    }
}
