/// The operator's console: `GET /console`, a page in plain HTML and JavaScript (no build
/// step, no external URL), and `GET /console/api/overview`, the JSON it polls
/// (Specs/http.md, "The operator's console").
///
/// Set it as ``SyncHTTPServer/Configuration/console``; nil (the default) answers 404 on
/// those paths. The page and its script and style are static and hold no data: they are
/// served to anyone. The overview needs, on a request whose identity middleware verified
/// (a bearer token), the role ``role``; on a request without an identity (no
/// authentication configured), a client on a loopback address. Otherwise it is answered
/// 403 `forbidden` (401 `unauthenticated` comes from the authentication middleware).
///
/// What the overview shows is recorded by the endpoint in memory, bounded (devices, the
/// last hour per minute, the last failures), since the process started; the data set's
/// own numbers (records and tombstones per entity, devices seen before the process
/// started, file size) come from ``dataSet`` when the storage can say them.
public struct SyncConsole: Sendable {
    /// The role a verified identity needs to read the overview: `admin` by default.
    public var role: String
    /// The data set's statistics, read at most every ``statisticsInterval`` (nil: the
    /// storage says none, as for PostgreSQL or tenants; the page says so).
    public var dataSet: (@Sendable () async throws -> ConsoleDataSetStatistics)?
    /// How long the data set's statistics are kept before they are read again: 10 s.
    public var statisticsInterval: Duration = .seconds(10)
    /// The most devices the overview lists (the furthest behind first): 50.
    public var maxDevices = 50
    /// The most entities the overview lists (the largest first): 20.
    public var maxEntities = 20
    /// What the storage is, in words, for the page's header (`SQLite /srv/server.sqlite`).
    public var storage: String

    /// Whether `path` is one of the console's static files (`/console`, its script and
    /// style), which need no credentials: a browser cannot send a bearer token when it
    /// opens a page, and they hold no data.
    package static func isStaticPath(_ path: String) -> Bool {
        path == "/console" || path == "/console/console.js" || path == "/console/console.css"
    }

    public init(
        role: String = "admin", storage: String = "", dataSet: (@Sendable () async throws -> ConsoleDataSetStatistics)? = nil
    ) {
        self.role = role
        self.storage = storage
        self.dataSet = dataSet
    }
}

/// What a data set holds, as its storage says it (``SyncConsole/dataSet``).
public struct ConsoleDataSetStatistics: Sendable, Equatable {
    public struct Entity: Sendable, Equatable {
        public var name: String
        /// Live records.
        public var records: Int
        /// Tombstones of deleted records.
        public var tombstones: Int

        public init(name: String, records: Int, tombstones: Int) {
            self.name = name
            self.records = records
            self.tombstones = tombstones
        }
    }

    /// A device the storage knows (its last stored reply).
    public struct Device: Sendable, Equatable {
        public var client: String
        /// Empty without authentication.
        public var user: String
        /// When its last reply was stored, in milliseconds since the epoch.
        public var lastSeen: Int64

        public init(client: String, user: String, lastSeen: Int64) {
            self.client = client
            self.user = user
            self.lastSeen = lastSeen
        }
    }

    public var revision: Int64
    public var entities: [Entity]
    /// Entries of the revision log.
    public var logEntries: Int
    /// Every device with a stored reply, the most recently seen first.
    public var devices: [Device]
    /// The data set's size in bytes, and what is free in it; nil when unknown.
    public var fileBytes: Int64?
    public var freeBytes: Int64?

    public init(
        revision: Int64, entities: [Entity], logEntries: Int, devices: [Device], fileBytes: Int64? = nil, freeBytes: Int64? = nil
    ) {
        self.revision = revision
        self.entities = entities
        self.logEntries = logEntries
        self.devices = devices
        self.fileBytes = fileBytes
        self.freeBytes = freeBytes
    }
}
