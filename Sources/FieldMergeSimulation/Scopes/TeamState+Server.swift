import FieldMerge
import FieldMergeProtocol
import FieldMergeServer
import FieldMergeServerSQLite

extension ServerEndpoint {
    /// The server's team-app records now (between requests): read from its SQLite file with
    /// plain SQL, or on another storage through an admin's view of everything (a catch-up
    /// from revision 0 of a user with the role `admin`, asked of the server directly).
    func teamState() async throws -> TeamState {
        let state = try await withServer { server -> TeamState in
            if var state = try await server.withSQLite({ try TeamState($0, revisions: true) }) {
                state.maxRevision = await server.maxRevision
                return state
            }
            return try await TeamState.adminView(of: server)
        }
        guard let state else { throw SimulationError("the scoped simulation needs its servers in this process") }
        return state
    }
}

extension TeamState {
    /// Every alive record of `server`, by a catch-up from revision 0 as an admin holding
    /// every project (pages of 10,000).
    static func adminView(of server: RevisionServer) async throws -> TeamState {
        var state = TeamState()
        let oracle = SyncIdentity(user: "oracle", roles: [TeamSchema.adminRole])
        var revision: Int64 = 0
        var holdings: ScopeHoldings?
        for entity in TeamSchema.schema.entities { state.rows[entity.name] = [:] }
        repeat {
            let request = SyncRequest(maxRevision: revision, changeSets: [], limit: 10_000, scopes: holdings)
            let response = try await server.handle(request, identity: oracle)
            for changeSet in response.changeSets {
                for changes in changeSet.entities {
                    let deleted = Set(changes.delete)
                    for record in changes.records {
                        if deleted.contains(record.id) {
                            state.rows[changes.entity]?[record.id] = nil
                            state.revisions["\(changes.entity)#\(record.id)"] = nil
                        } else {
                            state.rows[changes.entity]?[record.id] = record.values
                            state.revisions["\(changes.entity)#\(record.id)"] = record.revision
                        }
                    }
                    for id in changes.leave { state.rows[changes.entity]?[id] = nil }
                }
            }
            (revision, holdings, state.maxRevision) = (response.maxRevision, response.scopes, response.maxRevision)
            if !response.hasMore { break }
        } while true
        return state
    }
}
