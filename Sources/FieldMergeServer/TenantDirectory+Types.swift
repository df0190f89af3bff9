extension TenantDirectory {
    /// What a request needs of its tenant's data set.
    public enum Access: Sendable, Equatable {
        /// Only a data set that exists: the opener answers nil when the tenant has none, and
        /// creates nothing (a request that only reads, such as a catch-up).
        case existing
        /// The data set, created when the tenant has none yet (a request that writes).
        case create
    }

    /// How many tenants' servers stay open, and for how long.
    public struct Limits: Sendable, Equatable {
        /// The most servers open at once, those being opened or closed included. When a
        /// tenant must be opened and this many are, the least recently used one that no
        /// request holds is closed first; when every one is held, the request is refused with
        /// ``ServerError/Code/unavailable`` (HTTP 503, retryable) instead of running the
        /// process out of file descriptors. At least 1.
        public var maxOpen: Int
        /// How long a server no request holds stays open after its last request; nil keeps
        /// servers open until ``TenantDirectory/close()`` or until ``maxOpen`` needs room.
        public var idleTime: Duration?

        /// - Parameters:
        ///   - maxOpen: 64 by default: a SQLite tenant holds about 5 file descriptors, so 64
        ///     stay well under the common limit of 1,024.
        ///   - idleTime: 60 seconds by default.
        public init(maxOpen: Int = 64, idleTime: Duration? = .seconds(60)) {
            precondition(maxOpen >= 1, "maxOpen must be at least 1")
            precondition(idleTime.map { $0 > .zero } ?? true, "idleTime must be positive")
            self.maxOpen = maxOpen
            self.idleTime = idleTime
        }

        /// Every tenant opened stays open (the behaviour of ``TenantDirectory/init(open:)``).
        public static let unbounded = Limits(maxOpen: .max, idleTime: nil)
    }

    /// What the directory holds now and did so far, readable without waiting for it
    /// (`GET /health` shows it).
    public struct Statistics: Sendable, Equatable {
        /// Servers open, those being opened or closed included (never more than
        /// ``Limits/maxOpen``).
        public var open = 0
        /// Of those, servers a request holds now.
        public var inUse = 0
        /// Servers closed because they were idle for ``Limits/idleTime``.
        public var closedIdle = 0
        /// Servers closed to make room for another tenant's.
        public var evicted = 0
        /// Requests refused because every open server was in use.
        public var refusedBusy = 0

        public init() {}
    }

    /// A request's hold on its tenant's server: while a lease is held the server is not
    /// closed. Release it once, when the request is answered (``release()``), or use
    /// ``TenantDirectory/withServer(for:access:_:)``, which does.
    public struct Lease: Sendable {
        /// The tenant.
        public let tenant: String
        /// The tenant's server, or, when ``exists`` is false, the directory's server on an
        /// empty data set that is never stored: it answers a request that only reads as a new
        /// tenant's data set would (revision 0, no records). Never send it a write.
        public let server: RevisionServer
        /// Whether the tenant has a data set (opened or just created).
        public let exists: Bool
        let directory: TenantDirectory

        /// Lets the directory close the server again once it is idle.
        public func release() async {
            if exists { await directory.release(tenant) }
        }
    }
}
