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
