import FieldMerge
import FieldMergeProtocol
import FieldMergeServer
import FieldMergeServerSQLite
import FieldMergeServerHTTP
import FieldMergeSimulation
import FieldMergeSyncHTTP
import Foundation
import Testing

/// Specs/http.md §9: a failure has one status and reaches the client as one error, whichever
/// transport carries it: HTTP, ``InProcessTransport`` and the simulation's server all run the
/// server's ``SyncExchange`` and read its status through ``SyncStatus``.
@Suite struct ErrorContractTests {
    /// What is done to the server before the request.
    enum Damage: Sendable { case none, closed, damagedRow, takenRequestID }

    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var body: [UInt8]
        var gzip = false
        var damage = Damage.none
        var status: Int
        var code: String
        var testDescription: String { name }
        var retryable: Bool { SyncStatus.isRetryable(status) }
    }

    static let valid = RefusedRequestTests.valid
    /// A catch-up from the start: it reads the seeded list back.
    static let catchUp = Array(#"{"maxRevision":0,"changeSets":[]}"#.utf8)

    static let cases: [Case] = [
        Case(name: "malformed JSON", body: Array(valid.utf8.dropLast()), status: 400, code: "malformedJSON"),
        Case(name: "truncated gzip", body: Array(Gzip.compress(Array(valid.utf8)).dropLast(9)), gzip: true, status: 400, code: "gzipTruncated"),
        Case(name: "refused by the server", body: Array(valid.replacingOccurrences(of: "-1", with: "7").utf8), status: 400, code: "badRequest"),
        Case(name: "another protocol version", body: Array(valid.replacingOccurrences(of: #"{"maxRevision":1,"#, with: #"{"maxRevision":1,"protocolVersion":99,"#).utf8),
             status: 400, code: "unsupportedProtocolVersion"),
        Case(name: "another schema", body: Array(#"{"maxRevision":0,"changeSets":[],"schemaFingerprint":"0000"}"#.utf8), status: 409, code: "incompatibleSchema"),
        Case(name: "a device ahead of the data set", body: Array(#"{"maxRevision":99,"changeSets":[]}"#.utf8), status: 409, code: "revisionAhead"),
        Case(name: "a request id reused with other change sets",
             body: Array(valid.replacingOccurrences(of: #"{"maxRevision":1,"#, with: #"{"maxRevision":0,"clientID":"seed","requestID":"0-seed","#).utf8),
             damage: .takenRequestID, status: 422, code: "idempotencyMismatch"),
        Case(name: "a storage that fails", body: catchUp, damage: .closed, status: 500, code: "storage"),
        Case(name: "a storage holding damaged data", body: catchUp, damage: .damagedRow, status: 500, code: "corrupt"),
    ]

    /// Each transport, as a client sees it: the error `send` throws.
    enum Transport: String, CaseIterable, Sendable { case http, inProcess, simulation }

    @Test(arguments: cases, Transport.allCases)
    func aFailure_reachesTheClientAlike_throughEveryTransport(_ failure: Case, _ transport: Transport) async throws {
        let server = try await RefusedRequestTests.seededServer()
        try await Self.damage(server, failure.damage)
        let thrown: (any Error)?
        switch transport {
        case .http:
            thrown = try await withHTTPServer(server) { running in
                await Self.error { try await HTTPTransport(url: running.syncURL).send(failure.body, gzip: failure.gzip) }
            }
        case .inProcess:
            thrown = await Self.error { try await InProcessTransport(server: server).send(failure.body, gzip: failure.gzip) }
        case .simulation:
            let endpoint = ServerEndpoint(server: server, reopen: { throw ServerError(.storage, "no reopening here") })
            thrown = await Self.error { try await endpoint.send(failure.body, gzip: failure.gzip) }
        }
        if failure.retryable {
            let error = try #require(thrown as? TransportError, "\(String(describing: thrown))")
            #expect(error.message.contains("HTTP \(failure.status) \(failure.code)"), "\(error.message)")
        } else {
            let error = try #require(thrown as? SyncRequestRejected, "\(String(describing: thrown))")
            #expect(error.status == failure.status)
            #expect(error.code == failure.code, "\(error)")
        }
    }

    @Test func theTable_isTheOneServerErrorAndWireErrorFollow() {
        let statuses: [ServerError.Code: Int] = [
            .badRequest: 400, .unsupportedProtocolVersion: 400, .forbidden: 403, .revisionAhead: 409, .idempotencyMismatch: 422,
            .schemaMismatch: 500, .corrupt: 500, .storage: 500, .unavailable: 503,
        ]
        for (code, status) in statuses {
            let error = ServerError(code, "x")
            #expect(error.status == status, "\(code)")
            #expect(error.isRetryable == (status >= 500), "\(code)")
        }
        #expect(WireError(.tooLarge, "x").status == 413)
        #expect(WireError(.incompatibleSchema, "x").status == 409)
        #expect(WireError(.malformedJSON, "x").status == 400)
        for status in [408, 429, 500, 502, 503] { #expect(SyncStatus.isRetryable(status)) }
        for status in [400, 401, 403, 404, 409, 413, 415, 422] { #expect(!SyncStatus.isRetryable(status)) }
    }

    static func damage(_ server: RevisionServer, _ damage: Damage) async throws {
        switch damage {
        case .none: break
        case .takenRequestID:
            // Client "seed" took request "0-seed", anonymously and (as the simulation's server
            // names each client) as the user "seed".
            for identity in [nil, SyncIdentity(user: "seed")] {
                let record = WireRecord(id: -1, present: FieldMask([0]), values: [.text("Taken")])
                _ = try await server.handle(SyncRequest(maxRevision: 0, changeSets: [ChangeSet(entities: [
                    EntityChanges(entity: "lists", create: [-1], records: [record]),
                ])], clientID: "seed", requestID: "0-seed"), identity: identity)
            }
        case .closed: server.database.close()
        case .damagedRow: try server.database.execute(#"UPDATE "lists" SET "__fm_stamps" = X'00'"#)
        }
    }

    static func error(_ body: () async throws -> [UInt8]) async -> (any Error)? {
        do {
            _ = try await body()
            return nil
        } catch {
            return error
        }
    }
}
