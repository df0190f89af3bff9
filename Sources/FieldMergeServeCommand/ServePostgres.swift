import FieldMergeServer
import FieldMergeServerPostgres
import Logging

/// What `serve --postgres` runs beside its server: the connector (the pool) and the live
/// listener that tells the server's live subscribers of the commits other serve processes
/// make on the data set.
struct ServePostgres: Sendable {
    let connector: PostgresConnector
    let listener: PostgresLiveListener

    /// Starts the listener for `server`, on the data set of `source`; it logs its lost
    /// connections on standard error.
    init(_ connector: PostgresConnector, source: PostgresLiveSource, server: RevisionServer) {
        var options = PostgresLiveListener.Options()
        options.logger = Logger(label: "fieldmerge.postgres.live")
        self.connector = connector
        listener = PostgresLiveListener(source, hub: server.live, options: options)
    }

    /// Stops the listener, then closes the connections.
    func shutdown() async {
        await listener.shutdown()
        await connector.shutdown()
    }
}
