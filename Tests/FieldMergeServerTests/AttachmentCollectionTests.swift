import FieldMerge
import FieldMergeServer
import FieldMergeServerSQLite
import FieldMergeTestSupport
import Foundation
import Testing

/// Garbage collection of attachments on the SQLite server with the directory store.
@Suite struct AttachmentCollectionTests {
    @Test func unreferencedBytes_andStoppedUploads_goAfterTheGracePeriod_referencedOnesStay() async throws {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("collect-\(UUID().uuidString).sqlite").path
        defer { try? FileManager.default.removeItem(atPath: path + ".attachments") }
        let store = try DirectoryAttachmentStore(besideDatabase: path)
        var options = RevisionServer.Options()
        options.attachments = store
        let server = try RevisionServer(.memory, schema: AttachmentCollectionScenario.schema, options: options)
        try await AttachmentCollectionScenario.run(server: server, store: store)
    }

    @Test func aStoreThatDoesNotCollect_isLeftAlone() async throws {
        let server = try RevisionServer(.memory, schema: AttachmentCollectionScenario.schema)
        let report = try await server.collectAttachments(unusedFor: 0)
        #expect(report.examined == 0 && report.removedFinished == 0 && report.removedPartial == 0)
    }
}
