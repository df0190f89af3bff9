/// One server per tenant: each tenant's data set has its own storage, revision sequence and
/// replies, opened on first use and kept open. A request reaches only the server of the
/// tenant its authenticated identity names, so data of one tenant never reaches another.
///
/// ```swift
/// let tenants = TenantDirectory { tenant in
///     try RevisionServer(.file(path: "/var/lib/app/\(tenant).sqlite"), schema: schema)
/// }
/// ```
public actor TenantDirectory {
    public typealias Opener = @Sendable (_ tenant: String) async throws -> RevisionServer

    private let open: Opener
    private var servers: [String: RevisionServer] = [:]
    private var opening: [String: Task<RevisionServer, any Error>] = [:]

    /// - Parameter open: Opens (or creates) the server of a tenant; called once per tenant.
    ///   The tenant name it gets is valid (``isValidName(_:)``): safe in a file name.
    public init(open: @escaping Opener) { self.open = open }

    /// The server of `tenant`, opened on first use.
    ///
    /// - Throws: ``ServerError/Code/forbidden`` for a name that is not a valid tenant name;
    ///   the opener's error as ``ServerError/Code/storage`` (kept as the cause).
    public func server(for tenant: String) async throws(ServerError) -> RevisionServer {
        guard Self.isValidName(tenant) else {
            throw ServerError(.forbidden, "'\(tenant.prefix(80))' is not a valid tenant name")
        }
        if let server = servers[tenant] { return server }
        let task: Task<RevisionServer, any Error>
        if let pending = opening[tenant] {
            task = pending
        } else {
            let open = self.open
            task = Task { try await open(tenant) }
            opening[tenant] = task
        }
        do {
            let server = try await task.value
            servers[tenant] = server
            opening[tenant] = nil
            return server
        } catch {
            opening[tenant] = nil
            throw ServerError.wrapping(error)
        }
    }

    /// The tenants opened so far.
    public var openTenants: [String] { servers.keys.sorted() }

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
