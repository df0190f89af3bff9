import FieldMerge
import FieldMergeProtocol
import FieldMergeServer
import FieldMergeServerSQLite
import FieldMergeTestSupport
import Testing

/// A real that is not finite has no form on the wire, so only a caller in the same process
/// can send one: refused as a bad request before anything is stored (it used to be stored,
/// and the server then stopped on encoding the answer).
@Suite struct NonFiniteRealTests {
    @Test(arguments: [Double.nan, .infinity, -.infinity])
    func aNonFiniteReal_isABadRequest_andNothingIsStored(_ number: Double) async throws {
        let server = try RevisionServer(.memory, schema: HostileInputScenario.schema)
        let request = SyncRequest(
            maxRevision: 0, changeSets: [ChangeSet(entities: [Send.create("notes", -1, [.text("x"), .textSet(TextSet([])), .real(number)])])],
            clientID: "c", requestID: "r")
        let error = await #expect(throws: ServerError.self) { try await server.handle(request) }
        #expect(error?.code == .badRequest && "\(error!)".contains("not finite"))
        #expect(await server.maxRevision == 0)
        // A finite real in the same place is taken.
        let fine = SyncRequest(
            maxRevision: 0, changeSets: [ChangeSet(entities: [Send.create("notes", -1, [.text("x"), .textSet(TextSet([])), .real(-0.0)])])])
        #expect(try await server.handle(fine).maxRevision == 1)
    }
}
