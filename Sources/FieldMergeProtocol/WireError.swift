/// Why a sync body or a gzip stream could not be read.
///
/// Decoding never returns a partial result: it either yields the whole typed document or
/// throws one of these, with the byte offset in the input where the problem was found.
public struct WireError: Error, Equatable, Sendable, CustomStringConvertible {
    public enum Code: String, Sendable {
        /// Not JSON: a syntax error, invalid UTF-8, or the input ends early.
        case malformedJSON
        /// Valid JSON of the wrong kind for its place (a string where an id belongs, ...).
        case unexpectedType
        /// A number outside what its place allows (ints beyond Int64, negative revisions, ...).
        case outOfRange
        /// Containers nested deeper than ``WireLimits/maxDepth``.
        case tooDeep
        /// Input longer than ``WireLimits/maxBytes``.
        case tooLarge
        /// A change set names an entity the schema does not have.
        case unknownEntity
        /// Attributes, stamps or an entity object carry a key the schema does not know.
        case unknownField
        /// Well-typed but invalid: a bad date or base64, a lone surrogate, an attribute key
        /// that is not an integer, a type listed without its object, a missing key.
        case invalidValue
        /// An object repeats a key (or a change set's `types` an entity).
        case duplicateKey
        /// Not a gzip stream, or a damaged one (bad header, data or checksum; trailing bytes).
        case gzipCorrupt
        /// A gzip stream that ends early.
        case gzipTruncated
        /// A gzip stream that inflates to more than the allowed size.
        case gzipTooLarge
        /// The request's schema fingerprint is not the reader's: client and server use
        /// different schemas (HTTP 409).
        case incompatibleSchema
    }

    public var code: Code
    public var message: String
    /// The byte offset in the input where the problem was found, where known.
    public var offset: Int?
    /// For ``Code/incompatibleSchema``: the server's schema outline, one line per entity and
    /// field, for the client to say what differs from its own.
    public var schema: [String]?

    public init(_ code: Code, _ message: String, offset: Int? = nil) {
        self.code = code
        self.message = message
        self.offset = offset
    }

    public var description: String {
        if let offset { return "\(code.rawValue) at byte \(offset): \(message)" }
        return "\(code.rawValue): \(message)"
    }
}

/// Bounds that decoding enforces, so a hostile or broken peer costs bounded memory and time.
public struct WireLimits: Sendable, Equatable {
    /// The deepest nesting of JSON arrays and objects accepted. Sync documents need 8
    /// (a stamp inside `__stamps__` inside a record); the rest is room for unknown keys.
    public var maxDepth = 32
    /// The longest JSON body accepted, in bytes.
    public var maxBytes = 256 << 20
    /// The most a gzip'd body may inflate to, in bytes.
    public var maxDecompressedBytes = 512 << 20

    public init() {}

    public init(maxDepth: Int = 32, maxBytes: Int = 256 << 20, maxDecompressedBytes: Int = 512 << 20) {
        self.maxDepth = maxDepth
        self.maxBytes = maxBytes
        self.maxDecompressedBytes = maxDecompressedBytes
    }
}
