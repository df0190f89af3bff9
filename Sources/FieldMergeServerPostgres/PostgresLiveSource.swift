/// Where the commits of one data set in PostgreSQL are announced, for a
/// ``PostgresLiveListener``: taken from its storage (``PostgresServerStorage/liveSource``)
/// before a server owns the storage, and safe to share.
public struct PostgresLiveSource: Sendable {
    /// The connections' database.
    public let connector: PostgresConnector
    /// The NOTIFY channel (``PostgresServerStorage/liveChannel``).
    public let channel: String
    /// Reads the data set's revision (one row, one column).
    let revisionQuery: String
}

extension PostgresServerStorage {
    /// Where this storage's data set announces its commits.
    public var liveSource: PostgresLiveSource {
        PostgresLiveSource(
            connector: connector, channel: liveChannel,
            revisionQuery: order == .parallel
                ? "SELECT \(watermarkQuery)" : "SELECT \"value\" FROM \(named("__fm_server")) WHERE \"key\" = 'maxRevision'")
    }
}
