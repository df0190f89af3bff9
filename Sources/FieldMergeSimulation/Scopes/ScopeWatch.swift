import FieldMerge
import FieldMergeProtocol
import FieldMergeSync
import Synchronization

/// Reads every response a device's transport carried and checks that nothing outside its
/// user's scope reached it (Specs/simulation.md, "Scopes"). Devices sync one after another,
/// so the server's state read right after a response is the state it was computed from
/// (its own writes included, which the server allows only within the scope): each record of
/// a scoped entity it carries must lie under a project the user holds in that state, by the
/// rules (`TeamState`), and the holdings it gives must be exactly those projects.
actor ScopeWatch {
    struct Counts: Sendable, Equatable {
        var responses = 0, records = 0
        /// Records a response carried whose root could not be judged: deleted before the
        /// watch ever saw them alive (created and deleted between two reads).
        var unjudged = 0
        /// Ids listed under `leave`, and records refused as `unauthorized`.
        var leaves = 0, refusals = 0
    }

    private(set) var counts = Counts()
    private(set) var violations = Violations()
    /// What each device was told to leave ("entity#id"), by device.
    private(set) var leaves: [Int: Set<String>] = [:]
    /// The last root and parent seen of every record of a scoped entity ("entity#id").
    private var last: [String: (root: Int64?, parent: (entity: String, id: Int64)?)] = [:]
    private let codec: WireCodec
    private let directory: TeamDirectory
    private let read: @Sendable () async throws -> TeamState

    /// - Parameter read: Reads the server's records now (between requests).
    init(schema: Schema, directory: TeamDirectory, read: @escaping @Sendable () async throws -> TeamState) {
        codec = WireCodec(schema: schema)
        self.directory = directory
        self.read = read
    }

    /// Remembers the roots of the records the server holds now (before the first response).
    func look() async throws { remember(try await read()) }

    /// Checks one exchange of `device`: `body` as sent, `answer` as the server gave it.
    func inspect(body: [UInt8], answer: [UInt8], device: Int) async throws {
        let limit = WireLimits().maxDecompressedBytes
        guard let request = try? codec.decodeRequest(Gzip.decompressIfGzip(body, limit: limit)),
            let response = try? codec.decodeResponse(Gzip.decompressIfGzip(answer, limit: limit))
        else { return violations.add("device \(device): an exchange the watch could not read") }
        let state = try await read()
        let user = directory.user(of: request.clientID) ?? "?"
        let grants = state.grants(user: user, roles: directory.roles(of: user))
        counts.responses += 1
        let holds = grants.map { $0.sorted().map(String.init).joined(separator: ", ") } ?? "every project"
        for changeSet in response.changeSets {
            counts.refusals += changeSet.refused.filter { $0.code == "unauthorized" }.count
            for changes in changeSet.entities where TeamSchema.scoped.contains(changes.entity) {
                for record in changes.records {
                    counts.records += 1
                    let key = "\(changes.entity)#\(record.id)"
                    let roots = Self.roots(key, changes.entity, record.id, state, last)
                    if roots.isEmpty {
                        counts.unjudged += 1
                        continue
                    }
                    if !roots.contains(where: { TeamState.visible(changes.entity, root: $0, grants: grants) }) {
                        let root = roots[0]
                        violations.add("leak: device \(device) (\(user)) received \(key) under project \(root.map(String.init) ?? "none"), "
                            + "which \(user) does not hold (holds \(holds))")
                    }
                }
                for id in changes.leave {
                    counts.leaves += 1
                    leaves[device, default: []].insert("\(changes.entity)#\(id)")
                    if state.rows[changes.entity]?[id] != nil,
                        TeamState.visible(changes.entity, root: state.root(changes.entity, id), grants: grants)
                    {
                        violations.add("device \(device) (\(user)) was told to leave \(changes.entity)#\(id), which \(user) holds")
                    }
                }
            }
        }
        let expected: RootSet = grants.map { RootSet.ids($0) } ?? .all
        if response.scopes?["project"] != expected {
            violations.add("device \(device) (\(user)) was told it holds \(describe(response.scopes?["project"])), "
                + "not \(describe(expected))")
        }
        remember(state)
    }

    private func remember(_ state: TeamState) {
        last.merge(state.links()) { _, new in new }
    }

    /// The roots a record a response carried may have had when the response was made: its
    /// root now if it is alive; if it is gone, its root when last seen alive, or its parent's
    /// root now (the request that deleted it may have moved its parent first).
    private static func roots(
        _ key: String, _ entity: String, _ id: Int64, _ state: TeamState,
        _ last: [String: (root: Int64?, parent: (entity: String, id: Int64)?)]
    ) -> [Int64?] {
        if state.rows[entity]?[id] != nil { return [state.root(entity, id)] }
        guard let seen = last[key] else { return [] }
        var roots = [seen.root]
        if let parent = seen.parent, state.rows[parent.entity]?[parent.id] != nil { roots.append(state.root(parent.entity, parent.id)) }
        return roots
    }

    private func describe(_ set: RootSet?) -> String {
        switch set {
        case nil: "no holdings"
        case .all?: "every project"
        case .some(let ids)?: ids.isEmpty ? "no project" : "projects " + ids.map(String.init).joined(separator: ", ")
        }
    }
}

/// A device's transport with the watch inside: every answer the server gives it (lost,
/// duplicated and corrupted ones included, which the faults outside it then spoil) is
/// inspected before it goes on. With several servers, requests go to each in turn.
final class WatchedTransport: SyncTransport {
    let servers: [any SyncTransport]
    let device: Int
    let watch: ScopeWatch
    private let turn = Mutex(0)

    init(_ servers: [any SyncTransport], device: Int, watch: ScopeWatch) {
        (self.servers, self.device, self.watch) = (servers, device, watch)
    }

    func send(_ body: [UInt8], gzip: Bool) async throws -> [UInt8] {
        let next = turn.withLock { turn in
            defer { turn += 1 }
            return turn % servers.count
        }
        let answer = try await servers[next].send(body, gzip: gzip)
        try await watch.inspect(body: body, answer: answer, device: device)
        return answer
    }
}

/// Violations of the scoped run's oracle: the first few, and how many in all.
struct Violations: Sendable, Equatable {
    private(set) var first: [String] = []
    private(set) var count = 0

    mutating func add(_ message: String) {
        count += 1
        if first.count < 30 { first.append(message) }
    }

    mutating func add(_ other: Violations) {
        for message in other.first { add(message) }
        count += other.count - other.first.count
    }
}
