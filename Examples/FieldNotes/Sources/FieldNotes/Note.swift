import FieldMerge
import FieldMergeSQLite

// README block begin
struct Note: StoredRecord, Equatable, Sendable {
    enum Status: String, Sendable { case open, resolved }

    var id: Int64 = 0
    var site = ""
    var text = ""
    var status = Status.open
    var photos: Int64 = 0

    static let table = RecordTable<Note>("notes", [
        .text("site", \.site),                                // last edit wins, the default
        .text("text", \.text, strategy: .text),               // both sides' edited lines are kept
        .text("status", \.status, default: .open),            // an enum, stored as its raw value
        .integer("photos", \.photos, strategy: .counter),     // photos added on both sides all count
    ])
}
// README block end
