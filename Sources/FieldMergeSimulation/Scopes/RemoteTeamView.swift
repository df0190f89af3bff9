import FieldMerge
import FieldMergeProtocol
import FieldMergeSync

/// Servers in other processes for a scoped run (`fieldmerge serve` with the team schema,
/// ``TeamSchema/policy`` and an HS256 secret; Specs/simulation.md, "Scopes"): how to reach
/// each with a token, and the secret the tokens are signed with.
public struct ScopedRemote: Sendable {
    /// Gives the bearer token of a request (`refresh`: after a 401), as `HTTPTransport`'s
    /// `token:` callback takes it.
    public typealias Token = @Sendable (_ refresh: Bool) async throws -> String?
    /// A transport to one server that sends the tokens `token` gives.
    public typealias Connect = @Sendable (_ token: @escaping Token) -> any SyncTransport

    /// One per server process (they serve one data set, which must start empty); a device's
    /// requests go to each in turn.
    public var servers: [Connect]
    public var tokens: TeamTokens

    public init(servers: [Connect], tokens: TeamTokens) {
        self.servers = servers
        self.tokens = tokens
    }
}

/// The oracle's view of a remote server: every record, kept up to date by catch-ups of a
/// user with the role `admin` (holding every project), each asking from the revision the last
/// one ended at, like a replica that never writes. Nothing goes through the faults.
actor RemoteTeamView {
    private let transport: any SyncTransport
    private let codec = WireCodec(schema: TeamSchema.schema)
    private var state = TeamState.empty
    private var holdings: ScopeHoldings?

    init(_ transport: any SyncTransport) { self.transport = transport }

    /// The server's records now.
    func read() async throws -> TeamState {
        let (transport, codec) = (self.transport, self.codec)
        // The watch reads one at a time: nothing changes these meanwhile.
        var (state, holdings) = (self.state, self.holdings)
        try await state.catchUp(holdings: &holdings) { request in
            let answer = try await transport.send(Gzip.compress(codec.encode(request)), gzip: true)
            return try codec.decodeResponse(Gzip.decompressIfGzip(answer, limit: WireLimits().maxDecompressedBytes))
        }
        (self.state, self.holdings) = (state, holdings)
        return state
    }
}
