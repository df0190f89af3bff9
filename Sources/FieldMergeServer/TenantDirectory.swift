import Synchronization

/// One server per tenant: each tenant's data set has its own storage, revision sequence and
/// replies. A request reaches only the server of the tenant its authenticated identity
/// names, so data of one tenant never reaches another.
///
/// Servers are opened on first use and closed again when idle, and no more than
/// ``Limits/maxOpen`` are open at once (``Limits``). A request holds its tenant's server
/// with a ``Lease`` while it uses it: a held server is never closed, by the idle timer or
/// to make room. A request that only reads (``Access/existing``) for a tenant that has no
/// data set yet creates none: it is answered by a server on an empty data set kept in
/// memory, as a new tenant's would be; the first write creates the tenant's data set.
///
/// ```swift
/// let tenants = TenantDirectory(limits: .init(maxOpen: 64, idleTime: .seconds(60))) { tenant, access in
///     let path = "/var/lib/app/\(tenant).sqlite"
///     guard access == .create || FileManager.default.fileExists(atPath: path) else { return nil }
///     return try RevisionServer(.file(path: path), schema: schema)
/// } empty: {
///     try RevisionServer(.memory, schema: schema)
/// }
/// ```
public actor TenantDirectory {
    /// Opens the server of a tenant, creating its data set when `access` is
    /// ``Access/create``; answers nil for ``Access/existing`` when the tenant has none.
    public typealias Opener = @Sendable (_ tenant: String, _ access: Access) async throws -> RevisionServer?
    /// Makes a server on an empty data set that is not kept (in memory), with the same
    /// schema and options as the tenants' servers.
    public typealias EmptyServer = @Sendable () async throws -> RevisionServer

    /// An open server, and how many requests hold it.
    struct Entry {
        let server: RevisionServer
        var leases: Int
        var lastUsed: ContinuousClock.Instant
    }

    public nonisolated let limits: Limits
    private let open: Opener
    private let makeEmpty: EmptyServer?
    var entries: [String: Entry] = [:]
    /// Tenants being opened: the task answers whether a server was opened (it is then in
    /// ``entries`` with one lease, its starter's).
    private var opening: [String: Task<Bool, any Error>] = [:]
    var closing: [String: Task<Void, Never>] = [:]
    private var empty: Task<RevisionServer, any Error>?
    var sweeper: Task<Void, Never>?
    var counters = Statistics()
    private let published = Mutex(Statistics())

    /// A directory whose servers `open` opens, within `limits`.
    ///
    /// - Parameters:
    ///   - limits: How many servers stay open and for how long (64, 60 s by default).
    ///   - open: Opens (``Access/existing``) or creates (``Access/create``) the server of a
    ///     tenant; called once each time the tenant is opened. The tenant name it gets is
    ///     valid (``isValidName(_:)``): safe in a file name.
    ///   - empty: Makes the server that answers requests that only read for tenants without
    ///     a data set (called once, kept).
    public init(limits: Limits = Limits(), open: @escaping Opener, empty: @escaping EmptyServer) {
        self.limits = limits
        self.open = open
        makeEmpty = empty
    }

    /// A directory whose `open` opens or creates the server of a tenant on first use, and
    /// keeps it open (``Limits/unbounded``, unless `limits` says otherwise); every request
    /// creates its tenant's data set. Servers on memory (tests) need this: a closed one
    /// loses its data.
    public init(limits: Limits = .unbounded, open: @escaping @Sendable (_ tenant: String) async throws -> RevisionServer) {
        self.limits = limits
        self.open = { tenant, _ in try await open(tenant) }
        makeEmpty = nil
    }

    deinit { sweeper?.cancel() }

    /// Holds the server of `tenant` for a request, opening it (or, for ``Access/create``,
    /// creating its data set) when it is not open; release the lease when the request is
    /// answered.
    ///
    /// - Throws: ``ServerError/Code/forbidden`` for a name that is not a valid tenant name;
    ///   ``ServerError/Code/unavailable`` when ``Limits/maxOpen`` servers are open and every
    ///   one is held by a request; the opener's error as ``ServerError/Code/storage`` (kept
    ///   as the cause).
    public func lease(_ tenant: String, _ access: Access = .create) async throws(ServerError) -> Lease {
        guard Self.isValidName(tenant) else {
            throw ServerError(.forbidden, "'\(tenant.prefix(80))' is not a valid tenant name")
        }
        while true {
            if var entry = entries[tenant] {
                entry.leases += 1
                entry.lastUsed = .now
                entries[tenant] = entry
                publish()
                return Lease(tenant: tenant, server: entry.server, exists: true, directory: self)
            }
            if let pending = closing[tenant] {
                await pending.value
                continue
            }
            if let pending = opening[tenant] {
                _ = try? await pending.value  // the outcome is in `entries` by now; look again
                continue
            }
            if let room = try makeRoom() {
                await room.value
                continue
            }
            let opened: Bool
            do { opened = try await startOpening(tenant, access).value } catch { throw ServerError.wrapping(error) }
            if opened, let entry = entries[tenant] {
                return Lease(tenant: tenant, server: entry.server, exists: true, directory: self)
            }
            guard access == .existing else {
                throw ServerError(.storage, "the opener of tenant '\(tenant)' created no server")
            }
            return Lease(tenant: tenant, server: try await emptyServer(), exists: false, directory: self)
        }
    }

    /// Runs `body` with the server of `tenant`, held for the time it runs (``lease(_:_:)``).
    public func withServer<T: Sendable>(
        for tenant: String, access: Access = .create, _ body: @Sendable (RevisionServer) async throws -> T
    ) async throws -> T {
        let lease = try await lease(tenant, access)
        do {
            let result = try await body(lease.server)
            await lease.release()
            return result
        } catch {
            await lease.release()
            throw error
        }
    }

    /// The server of `tenant`, opened (and its data set created) when it is not open. It
    /// is not held: it may be closed once idle. Use ``withServer(for:access:_:)`` for work.
    ///
    /// - Throws: As ``lease(_:_:)``.
    public func server(for tenant: String) async throws(ServerError) -> RevisionServer {
        let lease = try await lease(tenant, .create)
        release(tenant)
        return lease.server
    }

    /// The tenants whose servers are open now.
    public var openTenants: [String] { entries.keys.sorted() }

    /// The counts now, read without waiting for the directory.
    public nonisolated var statistics: Statistics { published.withLock { $0 } }

    /// Ends one lease on `tenant`'s server.
    func release(_ tenant: String) {
        guard var entry = entries[tenant], entry.leases > 0 else { return }
        entry.leases -= 1
        entry.lastUsed = .now
        entries[tenant] = entry
        publish()
    }

    /// Opens `tenant` in a task of its own, so that requests for it that arrive meanwhile
    /// wait for the same opening; its server enters ``entries`` held by its starter.
    private func startOpening(_ tenant: String, _ access: Access) -> Task<Bool, any Error> {
        let open = self.open
        let task = Task<Bool, any Error> {
            do {
                let server = try await open(tenant, access)
                opening[tenant] = nil
                if let server { entries[tenant] = Entry(server: server, leases: 1, lastUsed: .now) }
                startSweeping()
                publish()
                return server != nil
            } catch {
                opening[tenant] = nil
                publish()
                throw error
            }
        }
        opening[tenant] = task
        publish()
        return task
    }

    /// The server on an empty data set, made once.
    private func emptyServer() async throws(ServerError) -> RevisionServer {
        guard let makeEmpty else { throw ServerError(.storage, "the tenant directory has no server for tenants without a data set") }
        let task = empty ?? Task { try await makeEmpty() }
        empty = task
        do { return try await task.value } catch {
            empty = nil
            throw ServerError.wrapping(error)
        }
    }

    /// Servers open, being opened or being closed.
    var occupied: Int { entries.count + opening.count + closing.count }

    /// Publishes the counts for ``statistics``.
    func publish() {
        var now = counters
        now.open = occupied
        now.inUse = entries.values.reduce(0) { $0 + ($1.leases > 0 ? 1 : 0) }
        published.withLock { $0 = now }
    }

    /// 1 to 64 ASCII letters, digits, `_` and `-`, not starting with `-`.
    public static func isValidName(_ name: String) -> Bool {
        let bytes = Array(name.utf8)
        guard (1...64).contains(bytes.count), bytes[0] != UInt8(ascii: "-") else { return false }
        return bytes.allSatisfy { byte in
            (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte)
                || byte == UInt8(ascii: "_") || byte == UInt8(ascii: "-")
        }
    }
}
