import FieldMerge
import FieldMergeSQLite
import FieldMergeServer
import FieldMergeServerSQLite
import FieldMergeSync
import Foundation
import Testing

/// The snippets of the FieldMergeSync article "Building a two-device app", run in order in
/// one scope, between `// Article block begin` and `// Article block end` (``DocSnippets``
/// checks that they are the article's, line for line); the checks between them are the
/// test's own.
@Suite struct SyncArticleTests {
    @Test func articleSnippets_runInOrder_andTheDevicesAgree() async throws {
        // Article block begin
        struct GroceryItem: StoredRecord {
            var id: Int64 = 0
            var name = ""
            var quantity: Int64 = 1
            var isChecked = false
            static let table = RecordTable<GroceryItem>("items", [
                .text("name", \.name, strategy: keepBothNames),
                .integer("quantity", \.quantity, strategy: .counter),   // both sides' additions count
                .bool("isChecked", \.isChecked, strategy: .max),        // checked (true) beats unchecked
            ])

            /// Both renamed the item: keep both names, in a fixed order, for a person to tidy up.
            static let keepBothNames = FieldStrategy.custom("keepBothNames") { input in
                guard case .text(let mine) = input.local, case .text(let theirs) = input.remote else { return input.lastEdit }
                return .text([mine, theirs].sorted().joined(separator: " / "))
            }
        }

        let schema = try Schema([GroceryItem.table.entity])
        // Article block end
        #expect(schema.entity("items")?.fields.map(\.strategy?.name) == ["keepBothNames", "counter", "max"])

        // Article block begin
        let renamed = FieldMergeInput(
            entity: "items", id: 1, field: Field("name", .text),
            ancestor: "Milk", ancestorStamp: Stamp(clock: 1, replica: ReplicaID(1)),
            local: "Oat milk", localStamp: Stamp(clock: 2, replica: ReplicaID(1)),
            remote: "Whole milk", remoteStamp: Stamp(clock: 3, replica: ReplicaID(2)))
        let both = GroceryItem.keepBothNames.resolve(renamed)   // "Oat milk / Whole milk", whoever is local
        // Article block end
        #expect(both == "Oat milk / Whole milk")
        var swapped = renamed
        (swapped.local, swapped.remote) = (renamed.remote, renamed.local)
        #expect(GroceryItem.keepBothNames.resolve(swapped) == both)

        // Article block begin
        let folder = URL.temporaryDirectory.appending(path: "groceries-\(UUID())")   // an app: its support folder
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let transport = InProcessTransport(server: try RevisionServer(.memory, schema: schema))
        let alice = SyncClient(store: try Store(.file(path: folder.appending(path: "alice.sqlite").path), schema: schema),
                               transport: transport)
        let bob = SyncClient(store: try Store(.file(path: folder.appending(path: "bob.sqlite").path), schema: schema),
                             transport: transport)
        // Article block end
        defer { try? FileManager.default.removeItem(at: folder) }

        // Article block begin
        try await alice.write { store in
            var milk = GroceryItem(name: "Milk")
            try store.insert(&milk)                  // id -1 until the server assigns 1
        }
        _ = try await alice.sync()                   // the create goes up
        _ = try await bob.sync()                     // Bob catches up: he has item 1 too
        // Article block end
        #expect(try await bob.write { try $0.fetchAll(GroceryItem.self).map(\.id) } == [1])

        // Article block begin
        try await alice.write { store in
            var milk = try store.fetchAll(GroceryItem.self)[0]
            milk.name = "Oat milk"
            milk.quantity += 1
            _ = try store.save(milk)
        }
        try await bob.write { store in
            var milk = try store.fetchAll(GroceryItem.self)[0]
            milk.name = "Whole milk"
            milk.quantity += 2
            milk.isChecked = true
            _ = try store.save(milk)
        }
        // Article block end

        // Article block begin
        _ = try await alice.sync()
        let bobsSync = try await bob.sync()          // bobsSync.conflicts: name (keepBothNames), quantity (counter)
        _ = try await alice.sync()
        let items = try await alice.write { try $0.fetchAll(GroceryItem.self) }
        // one item on both devices: "Oat milk / Whole milk", quantity 4 (1 + 1 + 2), checked
        // Article block end
        #expect(Set(bobsSync.conflicts.map { "\($0.field ?? ""):\($0.strategy)" }) == ["name:keepBothNames", "quantity:counter"])
        let bobsItems = try await bob.write { try $0.fetchAll(GroceryItem.self) }
        for list in [items, bobsItems] {
            #expect(list.count == 1)
            #expect(list.first?.name == "Oat milk / Whole milk")
            #expect(list.first?.quantity == 4)
            #expect(list.first?.isChecked == true)
        }
    }
}
