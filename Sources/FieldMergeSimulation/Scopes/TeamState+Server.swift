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
    /// every project.
    static func adminView(of server: RevisionServer) async throws -> TeamState {
        var state = TeamState.empty
        let oracle = SyncIdentity(user: "oracle", roles: [TeamSchema.adminRole])
        var holdings: ScopeHoldings?
        try await state.catchUp(holdings: &holdings) { try await server.handle($0, identity: oracle) }
        return state
    }

    /// Asks `ask` for what changed since this state's revision, as an admin holding every
    /// project (pages of 10,000, `holdings` as the last answer gave them), and takes it in.
    mutating func catchUp(holdings: inout ScopeHoldings?, _ ask: (SyncRequest) async throws -> SyncResponse) async throws {
        repeat {
            let response = try await ask(SyncRequest(maxRevision: maxRevision, changeSets: [], limit: 10_000, scopes: holdings))
            apply(response)
            holdings = response.scopes
            if !response.hasMore { return }
        } while true
    }

    /// No records yet, every entity's table present.
    static var empty: TeamState {
        var state = TeamState()
        for entity in TeamSchema.schema.entities { state.rows[entity.name] = [:] }
        return state
    }

    /// Takes in a catch-up answer to an admin: its records, its deletes (and ids to leave,
    /// which an admin is never told), and its revision.
    mutating func apply(_ response: SyncResponse) {
        for changeSet in response.changeSets {
            for changes in changeSet.entities {
                let gone = Set(changes.delete).union(changes.leave)
                for record in changes.records where !gone.contains(record.id) {
                    rows[changes.entity]?[record.id] = record.values
                    revisions["\(changes.entity)#\(record.id)"] = record.revision
                }
                for id in gone {
                    rows[changes.entity]?[id] = nil
                    revisions["\(changes.entity)#\(id)"] = nil
                }
            }
        }
        maxRevision = response.maxRevision
    }
}
