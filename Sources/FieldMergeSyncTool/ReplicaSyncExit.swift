/// The exit codes of `fieldmerge sync`, one per kind of outcome a script acts on.
public enum ReplicaSyncExit: Int32, Sendable, CaseIterable {
    /// Synced: nothing left to send, catch-up complete.
    case settled = 0
    /// The sync ran, but changes are left in the replica: kept aside because the server
    /// refused them, or still in conflict. They stay in the file; nothing is lost.
    case stuck = 1
    /// Bad input: the URL, the schema file, the token file, or a replica file that cannot
    /// be opened with that schema. Nothing was changed.
    case badInput = 2
    /// The server could not be reached or failed (timeout, connection refused or lost,
    /// HTTP 5xx): try again later.
    case unreachable = 3
    /// The server refused the request as it stands (HTTP 4xx: another schema, a token it
    /// does not accept, a body over its limits) or answered something unreadable.
    case protocolError = 4
    /// The replica failed locally (busy, full, damaged), or the sync was interrupted.
    case localFailure = 5

    /// What the code means, for `--help` and the specification.
    public var meaning: String {
        switch self {
        case .settled: return "synced, nothing left"
        case .stuck: return "changes left unsynced (refused and kept aside, or in conflict)"
        case .badInput: return "bad URL, schema file, token file or replica file; nothing changed"
        case .unreachable: return "server unreachable or failing; retry later"
        case .protocolError: return "request refused by the server (4xx) or unreadable answer"
        case .localFailure: return "local store failure or interrupted"
        }
    }
}
