/// What the first bytes of a response say: its `maxRevision` and whether more pages follow.
///
/// FieldMerge's server writes these two members first (`{"maxRevision":N,"hasMore":true,`),
/// so that a client can ask for the next catch-up page while it still decodes this one.
/// The protocol does not require that order: a body that starts otherwise has no head, and
/// the client waits for the full decode. A head is a hint, never the truth: the decoded
/// response is, and a page asked for on a head that disagrees with it is dropped unread.
/// Its `maxRevision` is always the body's, and it says `hasMore` only when the body does;
/// a body that writes `"hasMore": true` later than second has a head without it.
package struct ResponseHead: Sendable, Equatable {
    /// The response's `maxRevision`.
    package var maxRevision: Int64
    /// Whether the response says `"hasMore": true`.
    package var hasMore: Bool

    /// A head as given.
    ///
    /// - Parameters:
    ///   - maxRevision: The response's `maxRevision`.
    ///   - hasMore: Whether it says `"hasMore": true`.
    package init(maxRevision: Int64, hasMore: Bool) {
        self.maxRevision = maxRevision
        self.hasMore = hasMore
    }

    /// How many bytes of a body ``init(body:)`` reads at most.
    package static let length = 64

    /// The head of a response body as it arrived (gzip'd or not), or nil when it does not
    /// start exactly as FieldMerge's server writes it.
    ///
    /// - Parameter body: The response body; only its first bytes are inflated and read.
    package init?(body: [UInt8]) {
        self.init(json: Gzip.prefix(of: body, count: Self.length))
    }

    /// The head of the first bytes of a JSON response, or nil when they do not start with
    /// `{"maxRevision":<integer>,` followed by `"hasMore":true` or by another member.
    ///
    /// - Parameter json: The body's first bytes, already inflated.
    package init?(json: [UInt8]) {
        let start = Array(#"{"maxRevision":"#.utf8)
        guard json.count > start.count, json.starts(with: start) else { return nil }
        var index = start.count
        let negative = json[index] == UInt8(ascii: "-")
        if negative { index += 1 }
        var magnitude: UInt64 = 0
        let digits = index
        while index < json.count, (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(json[index]) {
            let (times, overflow) = magnitude.multipliedReportingOverflow(by: 10)
            let (sum, carry) = times.addingReportingOverflow(UInt64(json[index] - UInt8(ascii: "0")))
            guard !overflow, !carry, sum <= UInt64(Int64.max) else { return nil }
            magnitude = sum
            index += 1
        }
        // One digit, or several without a leading zero, and then a comma: anything else
        // (a fraction, an exponent, a number cut off at the end of the bytes) has no head.
        let count = index - digits
        guard count > 0, count == 1 || json[digits] != UInt8(ascii: "0"), index < json.count,
              json[index] == UInt8(ascii: ",") else { return nil }
        let rest = json[(index + 1)...]
        let more = Array(#""hasMore":true"#.utf8)
        let hasMore = rest.starts(with: more)
        // `"hasMore":true` must end there; a prefix of a longer token is not a head.
        if hasMore {
            let after = rest.index(rest.startIndex, offsetBy: more.count)
            guard after < rest.endIndex, rest[after] == UInt8(ascii: ",") || rest[after] == UInt8(ascii: "}") else { return nil }
        } else {
            guard rest.first == UInt8(ascii: "\"") else { return nil }
        }
        maxRevision = negative ? -Int64(magnitude) : Int64(magnitude)
        self.hasMore = hasMore
    }
}
