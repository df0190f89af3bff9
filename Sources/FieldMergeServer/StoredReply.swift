import FieldMergeProtocol

/// What the server keeps of a client's last request with change sets: the revision its
/// catch-up part ended on (8 bytes, big-endian) and a response holding only the answers to
/// its change sets, with the original `maxRevision` and `hasMore`.
struct StoredReply {
    var pageEnd: Int64
    var answers: SyncResponse

    init(pageEnd: Int64, answers: SyncResponse) {
        self.pageEnd = pageEnd
        self.answers = answers
    }

    init(decoding bytes: [UInt8], _ codec: WireCodec) throws {
        guard bytes.count > 8 else { throw ServerError(.corrupt, "a stored reply of \(bytes.count) bytes is damaged") }
        pageEnd = bytes[0..<8].reduce(0) { $0 << 8 | Int64($1) }
        answers = try codec.decodeResponse(Array(bytes[8...]))
    }

    func encoded(_ codec: WireCodec) -> [UInt8] {
        (0..<8).map { UInt8(truncatingIfNeeded: pageEnd >> (56 - 8 * $0)) } + codec.encode(answers)
    }
}

/// A stored reply as a storage returns it (``ServerStorage/reply(client:request:)``).
public struct StoredReplyRow: Sendable, Equatable {
    /// The bytes the server stored.
    public var response: [UInt8]
    /// The digest of the change sets of the request it answers; nil for replies stored
    /// before digests were kept (their retries are replayed without the check).
    public var digest: UInt64?

    public init(response: [UInt8], digest: UInt64?) {
        self.response = response
        self.digest = digest
    }
}

/// A reply to keep (``ServerStorage/storeReply(_:pruning:)``), replacing the client's previous one.
public struct ReplyToStore: Sendable, Equatable {
    /// The reply key: the user's part (``owner``) and the request's `clientID`.
    public var client: String
    /// Whose reply it is, for pruning by count: the user's part of the key (`"<length>:<user>"`),
    /// empty for a request no transport authenticated.
    public var owner: String
    /// The request's `requestID`.
    public var request: String
    /// The digest of the request's change sets.
    public var digest: UInt64
    /// When it was stored, in milliseconds since 1970 (the server's wall clock).
    public var storedAt: Int64
    public var response: [UInt8]

    public init(client: String, owner: String, request: String, digest: UInt64, storedAt: Int64, response: [UInt8]) {
        (self.client, self.owner, self.request, self.digest, self.storedAt, self.response) =
            (client, owner, request, digest, storedAt, response)
    }
}

/// Which stored replies go (``ServerStorage/storeReply(_:pruning:)``), after one was stored.
public struct ReplyPruning: Sendable, Equatable {
    /// Every reply stored before this time (milliseconds since 1970) goes, whoever's.
    public var storedBefore: Int64
    /// Whose replies are counted; empty: nobody's (anonymous replies go by age only).
    public var owner: String
    /// How many of ``owner``'s replies stay: the newest by time stored (then by key), always
    /// counting the one just stored, ``client``. At least 1.
    public var keeping: Int
    /// The reply key just stored, which stays.
    public var client: String

    public init(storedBefore: Int64, owner: String, keeping: Int, client: String) {
        (self.storedBefore, self.owner, self.keeping, self.client) = (storedBefore, owner, max(1, keeping), client)
    }
}
