import FieldMerge
import FieldMergeSQLite
@testable import FieldMergeSync
import FieldMergeProtocol
@testable import FieldMergeServer
import Testing

/// A record created offline under a parent that another replica deleted meanwhile: the
/// server's cascade cannot reach it, so the client applies the schema's `onDelete` itself.
/// Found by `fieldmerge simulate`: the apply failed at COMMIT on the foreign key, in every
/// sync after, and the device never synced again.
@Suite struct ServerDeleteOfALocalParentTests {
    @Test func childCreatedOfflineUnderAParentDeletedElsewhere_goesWithItAndTheSyncCompletes() async throws {
        let world = try World(clients: 2)
        let (a, b) = (world.clients[0], world.clients[1])
        try await a.withStore { store in
            _ = try store.insert("lists", values: ["Home"])
            _ = try store.insert("lists", values: ["Work"])
        }
        _ = try await a.sync()
        _ = try await b.sync()
        // B's change set is refused for a stale update of list 2, so the server never checks
        // B's task, whose list A has deleted; the catch-up then deletes that list on B.
        try await a.withStore { store in
            try store.delete("lists", id: 1)
            _ = try store.update("lists", id: 2, ["name": "Office"])
        }
        _ = try await a.sync()
        world.walls[1].advance(by: 1_000)
        try await b.withStore { store in
            _ = try store.update("lists", id: 2, ["name": "Studio"])
            try store.insert("tasks", values: ["Paint", false, 0, 1])
        }
        let summary = try await b.sync()
        #expect(summary.conflictingChangeSets == 1)
        #expect(try await b.withStore { try $0.pendingChanges().isEmpty })
        let contents = try await world.converge()
        #expect(contents == ["lists:integer(2)|text(\"Studio\")"])
    }
}
