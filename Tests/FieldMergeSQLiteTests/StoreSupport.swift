import FieldMerge
@testable import FieldMergeSQLite
import Foundation

/// The schema the store tests use: lists, tasks (cascading to lists), notes (setNull to
/// tasks), pins (restrict to tasks), and a kitchen-sink entity with every field type.
func storeSchema() throws -> Schema {
    try Schema([
        Entity("lists", fields: [Field("name", .text)]),
        Entity("tasks", fields: [
            Field("title", .text), Field("done", .bool), Field("count", .integer, strategy: .counter),
            Field("listID", .reference(to: "lists", onDelete: .cascade)),
        ]),
        Entity("notes", fields: [Field("body", .text), Field("taskID", .reference(to: "tasks", onDelete: .setNull))]),
        Entity("pins", fields: [Field("taskID", .reference(to: "tasks", onDelete: .restrict))]),
        Entity("things", fields: [
            Field("i", .integer), Field("r", .real), Field("t", .text), Field("b", .bool), Field("d", .date),
            Field("bl", .blob), Field("ts", .textSet),
        ]),
    ])
}

/// A temporary folder removed when the value is dropped... explicitly, by `remove()`.
struct TemporaryFolder {
    let path: String

    init() {
        path = NSTemporaryDirectory() + "fieldmerge-tests-" + UUID().uuidString
        try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    func file(_ name: String) -> String { path + "/" + name }
    func remove() { try? FileManager.default.removeItem(atPath: path) }
}

func memoryStore(replica: UInt64 = 1, wall: (any WallClock)? = nil) throws -> Store {
    try Store(.memory, schema: storeSchema(), replica: ReplicaID(replica), wall: wall ?? ManualWallClock(milliseconds: 1_000_000))
}
