import FieldMergeProtocol
import FieldMergeTestSupport
import Testing

/// The head of a response: read from its first bytes, gzip'd or not, and only when it
/// starts exactly as FieldMerge's server writes it.
@Suite struct ResponseHeadTests {
    @Test func theServersResponses_haveTheHeadTheyDecodeTo() throws {
        let codec = WireCodec(schema: try syncSchema())
        for (revision, more) in [(0, false), (7, true), (9_223_372_036_854_775_807, true), (42, false)] as [(Int64, Bool)] {
            let json = codec.encode(SyncResponse(maxRevision: revision, changeSets: [], hasMore: more))
            let expected = ResponseHead(maxRevision: revision, hasMore: more)
            #expect(ResponseHead(body: json) == expected)
            #expect(ResponseHead(body: Gzip.compress(json)) == expected)
        }
    }

    /// Found by the response fuzz target: `hasMore` written after another member is missed by
    /// the head (which then only costs the client its prefetch), never invented.
    @Test func aHasMoreWrittenLaterIsMissedByTheHeadNeverInvented() throws {
        let codec = WireCodec(schema: try syncSchema())
        let body = Array(#"{"maxRevision":9,"other":9,"hasMore":true,"deniedSubscriptions":{"project":[3]},"changeSets":[]}"#.utf8)
        let head = try #require(ResponseHead(body: body))
        let response = try codec.decodeResponse(body)
        #expect(head == ResponseHead(maxRevision: 9, hasMore: false))
        #expect(response.maxRevision == 9 && response.hasMore)
    }

    @Test func aHeadIsReadFromTheStartOfALargeGzipBody() throws {
        let tail = String(repeating: #"{"title":"Buy milk","isCompleted":false},"#, count: 60_000)
        let json = Array(#"{"maxRevision":1234,"hasMore":true,"changeSets":[\#(tail)]}"#.utf8)
        let compressed = Gzip.compress(json)
        #expect(json.count > 1 << 20, "deflated in pieces, as large answers are")
        #expect(Gzip.prefix(of: compressed, count: 40) == Array(json.prefix(40)))
        #expect(ResponseHead(body: compressed) == ResponseHead(maxRevision: 1234, hasMore: true))
    }

    @Test(arguments: [
        #"{"changeSets":[],"maxRevision":5}"#,            // another order: no head, the decode decides
        #"{ "maxRevision":5,"hasMore":true}"#,            // spaces
        #"{"maxRevision":05,"hasMore":true}"#,            // a leading zero
        #"{"maxRevision":5.0,"hasMore":true}"#,           // a fraction
        #"{"maxRevision":5e3,"hasMore":true}"#,           // an exponent
        #"{"maxRevision":-,"hasMore":true}"#,             // no digits
        #"{"maxRevision":9223372036854775808,"hasMore":true}"#,  // past Int64
        #"{"maxRevision":5"#,                             // cut off
        #"{"maxRevision":5,"hasMore":trueish}"#,          // not the token true
        #"{"maxRevision":5,hasMore:true}"#,               // not a member name
        "",
    ])
    func anythingElse_hasNoHead(body: String) {
        #expect(ResponseHead(body: Array(body.utf8)) == nil)
        #expect(ResponseHead(body: Gzip.compress(Array(body.utf8))) == nil)
    }

    @Test func aHeadWithoutHasMore_saysNoMore() {
        #expect(ResponseHead(json: Array(#"{"maxRevision":-3,"hasMore":false,"#.utf8)) == ResponseHead(maxRevision: -3, hasMore: false))
        #expect(ResponseHead(json: Array(#"{"maxRevision":0,"changeSets":[]}"#.utf8)) == ResponseHead(maxRevision: 0, hasMore: false))
    }

    /// Several gzip members are one stream, here as in `decompress`.
    @Test func aPrefixGoesOnIntoTheNextMember() throws {
        let first = Array(#"{"maxRevision":"#.utf8), second = Array(#"12,"hasMore":true,"changeSets":[]}"#.utf8)
        let stream = Gzip.compress(first) + Gzip.compress(second)
        #expect(Gzip.prefix(of: stream, count: 64) == first + second)
        #expect(try Gzip.decompress(stream, limit: 100) == first + second)
        #expect(ResponseHead(body: stream) == ResponseHead(maxRevision: 12, hasMore: true))
    }

    @Test func aDamagedOrTruncatedStream_givesWhatInflatedBeforeTheDamage() {
        let json = Array(#"{"maxRevision":77,"hasMore":true,"changeSets":[]}"#.utf8)
        let compressed = Gzip.compress(json)
        #expect(Gzip.prefix(of: Array(compressed.prefix(12)), count: 64).count < json.count)
        #expect(json.starts(with: Gzip.prefix(of: Array(compressed.prefix(compressed.count - 8)), count: 64)))
        var damaged = compressed
        damaged[3] = 0xFF  // reserved header flags: inflate refuses the header
        #expect(Gzip.prefix(of: damaged, count: 64).isEmpty)
        #expect(ResponseHead(body: damaged) == nil)
        #expect(Gzip.prefix(of: [0x1F, 0x8B], count: 64).isEmpty)
        #expect(Gzip.prefix(of: compressed, count: 0).isEmpty)
    }
}
