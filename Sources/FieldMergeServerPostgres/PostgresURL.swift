/// Where a PostgreSQL database is, as `postgres://user:password@host:port/database?sslmode=disable&schema=name`.
///
/// `postgresql://` is accepted too. The user, the password and the database may be
/// percent-encoded. `sslmode` is `disable` (the default: plain TCP, for loopback and private
/// networks), `prefer` or `require`. `schema` names the PostgreSQL schema that holds the data
/// set (default `public`), so several data sets, or tests, can share one database.
public struct PostgresURL: Sendable, Equatable, CustomStringConvertible {
    public enum TLSMode: String, Sendable, CaseIterable {
        case disable, prefer, require
    }

    public var user: String
    public var password: String?
    public var host: String
    public var port: Int
    public var database: String
    public var tls: TLSMode
    /// The PostgreSQL schema of the data set (a plain name, see ``PostgresIdentifier``).
    public var schema: String

    public init(
        user: String, password: String? = nil, host: String, port: Int = 5432, database: String,
        tls: TLSMode = .disable, schema: String = "public"
    ) {
        self.user = user
        self.password = password
        self.host = host
        self.port = port
        self.database = database
        self.tls = tls
        self.schema = schema
    }

    /// Parses `text`.
    ///
    /// - Throws: ``PostgresURLError`` saying what is wrong: another scheme, no user, host or
    ///   database, a port that is not a number in 1...65535, an unknown parameter or
    ///   `sslmode`, or a schema name that is not a plain identifier.
    public init(_ text: String) throws(PostgresURLError) {
        var rest = Substring(text)
        guard let scheme = rest.firstRange(of: "://") else {
            throw PostgresURLError(text, "it does not start with postgres://")
        }
        guard ["postgres", "postgresql"].contains(rest[..<scheme.lowerBound].lowercased()) else {
            throw PostgresURLError(text, "the scheme is \(rest[..<scheme.lowerBound]), not postgres")
        }
        rest = rest[scheme.upperBound...]
        var query: Substring = ""
        if let mark = rest.firstIndex(of: "?") {
            query = rest[rest.index(after: mark)...]
            rest = rest[..<mark]
        }
        guard let slash = rest.firstIndex(of: "/") else { throw PostgresURLError(text, "it names no database (…/database)") }
        let database = try Self.decode(rest[rest.index(after: slash)...], text, what: "database")
        guard !database.isEmpty, !database.contains("/") else { throw PostgresURLError(text, "it names no database (…/database)") }
        var authority = rest[..<slash]
        guard let at = authority.lastIndex(of: "@") else { throw PostgresURLError(text, "it names no user (user@host)") }
        let credentials = authority[..<at]
        authority = authority[authority.index(after: at)...]
        var user = credentials, password: String?
        if let colon = credentials.firstIndex(of: ":") {
            user = credentials[..<colon]
            password = try Self.decode(credentials[credentials.index(after: colon)...], text, what: "password")
        }
        let decodedUser = try Self.decode(user, text, what: "user")
        guard !decodedUser.isEmpty else { throw PostgresURLError(text, "it names no user (user@host)") }
        var host = authority, port = 5432
        if let colon = authority.lastIndex(of: ":"), !authority.hasSuffix("]") {
            host = authority[..<colon]
            let digits = authority[authority.index(after: colon)...]
            guard let number = Int(digits), (1...65_535).contains(number) else {
                throw PostgresURLError(text, "the port \(digits) is not a number within 1...65535")
            }
            port = number
        }
        if host.hasPrefix("["), host.hasSuffix("]") { host = host.dropFirst().dropLast() }
        guard !host.isEmpty else { throw PostgresURLError(text, "it names no host") }
        self.init(user: decodedUser, password: password, host: String(host), port: port, database: database)
        for pair in query.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let value = parts.count == 2 ? try Self.decode(parts[1], text, what: String(parts[0])) : ""
            switch parts[0] {
            case "sslmode":
                guard let mode = TLSMode(rawValue: value) else {
                    throw PostgresURLError(text, "sslmode \(value) is not one of disable, prefer, require")
                }
                tls = mode
            case "schema":
                guard PostgresIdentifier.isPlainName(value) else {
                    throw PostgresURLError(text, "the schema \(value) is not a plain name (\(PostgresIdentifier.plainNameRule))")
                }
                schema = value
            default:
                throw PostgresURLError(text, "unknown parameter \(parts[0]) (known: sslmode, schema)")
            }
        }
    }

    /// The URL without its password.
    public var description: String {
        let credentials = password == nil ? user : user + ":***"
        let shownHost = host.contains(":") ? "[\(host)]" : host
        return "postgres://\(credentials)@\(shownHost):\(port)/\(database)?sslmode=\(tls.rawValue)&schema=\(schema)"
    }

    /// `part` with its percent escapes decoded.
    private static func decode(_ part: Substring, _ text: String, what: String) throws(PostgresURLError) -> String {
        var bytes: [UInt8] = []
        var iterator = part.utf8.makeIterator()
        while let byte = iterator.next() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else {
                throw PostgresURLError(text, "the \(what) has a bad percent escape")
            }
            bytes.append(high << 4 | low)
        }
        guard let decoded = String(validating: bytes, as: UTF8.self) else {
            throw PostgresURLError(text, "the \(what) is not UTF-8 once decoded")
        }
        return decoded
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}

/// Why a PostgreSQL URL cannot be used.
public struct PostgresURLError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What is wrong, in words.
    public var reason: String
    /// The URL as given, its password hidden.
    public var url: String

    init(_ url: String, _ reason: String) {
        self.reason = reason
        self.url = Self.hidingPassword(url)
    }

    public var description: String { "bad PostgreSQL URL \(url): \(reason)" }

    /// `url` with the text between `user:` and `@` replaced by `***`.
    private static func hidingPassword(_ url: String) -> String {
        guard let scheme = url.firstRange(of: "://"),
              let at = url[scheme.upperBound...].firstIndex(of: "@"),
              let colon = url[scheme.upperBound..<at].firstIndex(of: ":") else { return url }
        return String(url[..<url.index(after: colon)]) + "***" + url[at...]
    }
}
