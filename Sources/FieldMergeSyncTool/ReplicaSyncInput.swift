import FieldMerge

/// What `fieldmerge sync` is asked to do: which replica file, which server, which schema.
public struct ReplicaSyncInput: Sendable {
    /// The server's sync endpoint, e.g. `http://127.0.0.1:8080/sync`.
    public var url: String
    /// The replica's SQLite file, created on first use.
    public var replica: String
    /// The schema file (Specs/schema.md), the same the server serves; unused when
    /// ``appSchema`` is set.
    public var schema: String
    /// The app's own schema, with its custom strategies and record rules, used instead of
    /// reading ``schema`` (a schema file can name only built-in strategies for this tool).
    public var appSchema: Schema?
    /// A file holding the bearer token (read again before each request, so a token renewed
    /// on disk is picked up); nil sends none.
    public var tokenFile: String?
    /// At most this many requests per sync.
    public var maxRounds = 1_000
    /// Sync again after a failure the server may recover from (unreachable, restarting), or
    /// after `maxRounds` without settling, until settled or `settleTimeout` has passed.
    public var untilSettled = false
    /// Seconds `untilSettled` keeps trying.
    public var settleTimeout = 60.0
    /// Records per request and per catch-up page.
    public var batchSize = 10_000
    /// The store's page cache in KiB while the sync downloads from revision 0
    /// (`SyncClient.downloadPageCacheKiB`); nil keeps the store's own.
    public var downloadPageCacheKiB: Int? = 2_048
    /// Gzip request bodies.
    public var gzip = true
    /// After the first sync, stay in live mode (Specs/live.md) until the run's `stop` returns.
    public var live = false

    public init(url: String, replica: String, schema: String, tokenFile: String? = nil) {
        self.url = url
        self.replica = replica
        self.schema = schema
        self.tokenFile = tokenFile
    }

    /// A run with the app's own `schema` (custom strategies included) instead of a file.
    public init(url: String, replica: String, schema: Schema, tokenFile: String? = nil) {
        self.init(url: url, replica: replica, schema: "", tokenFile: tokenFile)
        appSchema = schema
    }

    /// The schema as messages name it: the file, or the app's.
    var schemaName: String { appSchema.map { "the app's schema (version \($0.version))" } ?? "the schema \(schema)" }
}
