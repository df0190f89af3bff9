import FieldMergeProtocol
import Testing

/// ``ServerSentEventParser``: the WHATWG rules, chunks cut anywhere, the limits, and the
/// live events' SSE text read back.
@Suite struct ServerSentEventParserTests {
    typealias Message = ServerSentEventParser.Message

    /// Every rule at once: a BOM, the three line ends, comments, multi-line data, ids,
    /// retry, a field without colon, an unknown field, a message without data.
    static let stream = Array("\u{FEFF}: hello\r\nevent: ready\nid: 7\ndata: 7\n\n".utf8)
        + Array("data: first\r\ndata:second\rdata\r\n\r\n".utf8)
        + Array(":keep-alive\n\nevent: poke\rid: 9\rretry: 1500\rfoo: bar\rdata:  9 \r\r".utf8)
        + Array("event: lonely\nid\n\n".utf8)
        + Array("data: ünïcode\r\n\r\nevent: tail\ndata: never ended\n".utf8)
    static let expected = [
        Message(type: "ready", id: "7", data: Array("7".utf8)),
        Message(type: "message", id: "7", data: Array("first\nsecond\n".utf8)),
        Message(type: "poke", id: "9", data: Array(" 9 ".utf8)),
        Message(type: "message", id: nil, data: Array("ünïcode".utf8)),
    ]

    static func parse(_ chunks: [ArraySlice<UInt8>], maxBytes: Int = 64 << 20) throws(WireError) -> [Message] {
        var parser = ServerSentEventParser(maxBytes: maxBytes)
        var messages: [Message] = []
        for chunk in chunks { messages += try parser.feed(chunk) }
        return messages
    }

    static func parse(_ text: String) throws -> [Message] { try parse([Array(text.utf8)[...]]) }

    /// The snippet of the type's `///` comment, between `// ServerSentEventParser.swift block
    /// begin` and `… end` (`DocSnippets.docComments`, in FieldMergeServerHTTPTests, checks
    /// that it is the comment's code, line for line).
    @Test func docCommentSnippet_handlesEachMessageAsItsChunkArrives() throws {
        let stream = Array("event: ready\nid: 1\ndata: 1\n\ndata: cut off".utf8)
        let chunks = [stream[..<5], stream[5...]]
        var handled: [(type: String, data: [UInt8])] = []
        func handle(_ type: String, _ data: [UInt8]) { handled.append((type, data)) }
        // ServerSentEventParser.swift block begin
        var parser = ServerSentEventParser()
        for chunk in chunks {
            for message in try parser.feed(chunk) { handle(message.type, message.data) }
        }
        parser.finish()  // the stream ended: an unfinished message is dropped
        // ServerSentEventParser.swift block end
        #expect(handled.map(\.type) == ["ready"] && handled.map(\.data) == [Array("1".utf8)])
    }

    @Test func wholeStream_givesEveryDispatchedMessage() throws {
        var parser = ServerSentEventParser()
        #expect(try parser.feed(Self.stream) == Self.expected)
        #expect(parser.retry == .milliseconds(1500))
        #expect(parser.lastEventID == nil)
        let dropped = parser.finish()
        #expect(dropped, "the unended last message is dropped")
    }

    @Test func twoChunks_cutAtEveryByte_giveTheSameMessages() throws {
        for cut in 0...Self.stream.count {
            let chunks = [Self.stream[..<cut], Self.stream[cut...]]
            #expect(try Self.parse(chunks) == Self.expected, "cut at \(cut)")
        }
    }

    @Test func threeChunks_andOneByteAtATime_giveTheSameMessages() throws {
        let bytes = Self.stream
        for first in stride(from: 0, through: bytes.count, by: 3) {
            for second in first...bytes.count {
                let chunks = [bytes[..<first], bytes[first..<second], bytes[second...]]
                #expect(try Self.parse(chunks) == Self.expected, "cut at \(first) and \(second)")
            }
        }
        #expect(try Self.parse(bytes.indices.map { bytes[$0...$0] }) == Self.expected)
        // Empty chunks change nothing, also between a CR and its LF.
        let crlf = Array("data: a\r".utf8)[...]
        #expect(try Self.parse([crlf, [], [], Array("\ndata: b\r\n\r\n".utf8)[...]]) == [Message(data: Array("a\nb".utf8))])
    }

    @Test(arguments: ["\n", "\r\n", "\r"])
    func everyLineEnd_endsLinesAndMessages(_ end: String) throws {
        let text = "event: e" + end + "data: a" + end + "data: b" + end + end + "data: c" + end + end
        #expect(try Self.parse(text) == [Message(type: "e", data: Array("a\nb".utf8)), Message(data: Array("c".utf8))])
    }

    /// CR CR LF is two line ends: a line, then a blank line (the LF belongs to the second CR).
    @Test func crThenCrLf_isALineAndABlankLine() throws {
        #expect(try Self.parse("data: a\r\r\ndata: b\n\n") == [Message(data: Array("a".utf8)), Message(data: Array("b".utf8))])
        // LF CR is two line ends as well.
        #expect(try Self.parse("data: a\n\rdata: b\n\n") == [Message(data: Array("a".utf8)), Message(data: Array("b".utf8))])
    }

    @Test func fields_followTheStandard() throws {
        // A comment line, whatever it holds, is skipped; so are unknown and miscased fields.
        #expect(try Self.parse(": data: x\nDATA: y\nunknown: z\n\n").isEmpty)
        // A field without colon has an empty value; `data` alone is an empty line of data.
        #expect(try Self.parse("data\n\n") == [Message(data: [])])
        #expect(try Self.parse("data\ndata\n\n") == [Message(data: [0x0A])])
        // One space after the colon is dropped, not two, not a tab.
        #expect(try Self.parse("data:  two\n\n") == [Message(data: Array(" two".utf8))])
        #expect(try Self.parse("data:\tt\n\n") == [Message(data: Array("\tt".utf8))])
        #expect(try Self.parse("data:a:b\n\n") == [Message(data: Array("a:b".utf8))])
        // A message without data is not dispatched, and its type does not carry over.
        #expect(try Self.parse("event: x\n\ndata: y\n\n") == [Message(data: Array("y".utf8))])
        // An empty type is the default type.
        #expect(try Self.parse("event:\ndata: y\n\n") == [Message(data: Array("y".utf8))])
    }

    @Test func ids_persist_nulIsIgnored_emptyResets() throws {
        #expect(try Self.parse("id: 1\ndata: a\n\ndata: b\n\n").map(\.id) == ["1", "1"])
        #expect(try Self.parse("id: 1\n\ndata: a\n\n").map(\.id) == ["1"], "an id in a message without data still counts")
        #expect(try Self.parse("id: 1\ndata: a\n\nid: 2\u{0}\ndata: b\n\n").map(\.id) == ["1", "1"])
        #expect(try Self.parse("id: 1\ndata: a\n\nid\ndata: b\n\n").map(\.id) == ["1", nil])
    }

    @Test func retry_takesOnlyDigits() throws {
        var parser = ServerSentEventParser()
        _ = try parser.feed(Array("retry: 2500\n\n".utf8))
        #expect(parser.retry == .milliseconds(2500))
        for ignored in ["retry: 2.5\n", "retry: -1\n", "retry:\n", "retry: 99999999999999999999999\n", "retry: 1 \n"] {
            _ = try parser.feed(Array(ignored.utf8))
            #expect(parser.retry == .milliseconds(2500), "\(ignored)")
        }
    }

    @Test func bom_isSkippedOnlyAtTheVeryStart() throws {
        let bom: [UInt8] = [0xEF, 0xBB, 0xBF]
        let message = Array("data: a\n\n".utf8)
        #expect(try Self.parse([(bom + message)[...]]) == [Message(data: Array("a".utf8))])
        // Cut inside the BOM.
        #expect(try Self.parse([[0xEF], [0xBB], (bom.suffix(1) + message)[...]]) == [Message(data: Array("a".utf8))])
        // A second BOM, or one later in the stream, is part of a field name (unknown).
        #expect(try Self.parse([(bom + bom + message)[...]]).isEmpty)
        #expect(try Self.parse([(message + bom + message)[...]]) == [Message(data: Array("a".utf8))])
        // The start of a BOM that is not one is the start of the first line.
        #expect(try Self.parse([[0xEF, 0xBB], Array(":\n".utf8)[...], message[...]]) == [Message(data: Array("a".utf8))])
        #expect(try Self.parse([[0xEF], Array("data: b\n\n".utf8)[...]]).isEmpty)
    }

    @Test func finish_dropsTheUnendedMessage_andStartsANewStream() throws {
        var parser = ServerSentEventParser()
        #expect(try parser.feed(Array("id: 4\ndata: a\n".utf8)).isEmpty)
        let dropped = parser.finish()
        #expect(dropped)
        let droppedAgain = parser.finish()
        #expect(!droppedAgain, "nothing left to drop")
        // A new stream: its BOM is skipped again, the last event ID is kept.
        #expect(try parser.feed([0xEF, 0xBB, 0xBF] + Array("data: b\n\n".utf8)) == [Message(id: "4", data: Array("b".utf8))])
        // A line cut before its end is dropped too.
        #expect(try parser.feed(Array("data: c".utf8)).isEmpty)
        let droppedLine = parser.finish()
        #expect(droppedLine)
        #expect(try parser.feed(Array("\n\n".utf8)).isEmpty)
    }

    @Test func lineAndDataWithinTheLimit_areTaken() throws {
        let limit = 64
        let line = Array(("data:" + String(repeating: "x", count: limit - 5) + "\n\n").utf8)
        #expect(try Self.parse([line[...]], maxBytes: limit).first?.data.count == limit - 5)
        let data = String(repeating: "y", count: 30)
        // 30 + LF + 30 = 61 bytes of data, then 61 + LF + 2 = 64: at the limit.
        let text = "data:\(data)\ndata:\(data)\ndata:yy\n\n"
        #expect(try Self.parse([Array(text.utf8)[...]], maxBytes: limit).first?.data.count == limit)
    }

    @Test func lineOverTheLimit_throwsTooLarge_evenWithoutALineEnd() throws {
        let limit = 64
        let long = Array(("data: a\n\n" + String(repeating: "x", count: limit + 1)).utf8)
        let whole = #expect(throws: WireError.self) { try Self.parse([long[...]], maxBytes: limit) }
        #expect(whole?.code == .tooLarge && whole?.offset == 9)
        // Fed a few bytes at a time: it throws as soon as the line passes the limit.
        var parser = ServerSentEventParser(maxBytes: limit)
        var fed = 0
        let error = #expect(throws: WireError.self) {
            for start in stride(from: 0, to: 10_000, by: 7) {
                _ = try parser.feed(Array(repeating: UInt8(ascii: "z"), count: 7))
                fed = start + 7
            }
        }
        #expect(error?.code == .tooLarge && error?.offset == 0)
        #expect(fed <= limit, "stopped at the chunk that passed the limit")
    }

    @Test func dataOverTheLimit_throwsTooLarge() throws {
        let limit = 64
        let line = "data:" + String(repeating: "x", count: 40) + "\n"
        let error = #expect(throws: WireError.self) { try Self.parse([Array((line + line + "\n").utf8)[...]], maxBytes: limit) }
        #expect(error?.code == .tooLarge && error?.offset == line.utf8.count)
        #expect(error?.message.contains("data") == true)
    }

    // MARK: Live events

    static let events: [LiveEvent] = [
        .ready(revision: 12),
        .changes(after: 12, revision: 15, response: Array(#"{"maxRevision":15,"changeSets":[{"types":["lists"],"note":"é\n"}]}"#.utf8)),
        .poke(revision: 9_223_372_036_854_775_807),
        .changes(after: 0, revision: 1, response: []),
    ]

    static func liveEvents(_ messages: [Message]) throws -> [LiveEvent] {
        try messages.map { message throws(WireError) in try LiveEvent(type: message.type, id: message.id, data: message.data) }
    }

    @Test(arguments: events)
    func liveEvent_readsBackFromItsSSEText(_ event: LiveEvent) throws {
        var parser = ServerSentEventParser()
        let messages = try parser.feed(event.serverSentEvent)
        #expect(messages.count == 1)
        #expect(messages.first?.type == event.type && messages.first?.id == String(event.revision))
        #expect(try Self.liveEvents(messages) == [event])
        let dropped = parser.finish()
        #expect(!dropped, "the event ends with its blank line")
    }

    @Test func liveEventStream_withKeepAlives_cutAnywhere_readsBack() throws {
        let bytes = Self.events.flatMap { LiveEvent.keepAlive + $0.serverSentEvent } + LiveEvent.keepAlive
        for cut in 0...bytes.count {
            #expect(try Self.liveEvents(Self.parse([bytes[..<cut], bytes[cut...]])) == Self.events, "cut at \(cut)")
        }
    }

    /// A page gzip'd in base64 travels as `changes-gzip` and reads back as the `changes`
    /// event it stands for, cut anywhere in the stream.
    @Test func compressedChanges_readBackAsTheChangesTheyStandFor() throws {
        let json = Array(("{\"maxRevision\":15,\"changeSets\":[{\"types\":[\"lists\"],\"lists\":{\"attributes\":{"
            + (1...300).map { "\"\($0)\":{\"name\":\"list \($0)\"}" }.joined(separator: ",") + "}}}]}").utf8)
        let body = Base64.encode(Gzip.compress(json))
        #expect(body.count * 3 < json.count, "\(body.count) bytes for \(json.count)")
        let sent = LiveEvent.compressedChanges(after: 12, revision: 15, body: body)
        #expect(sent.type == "changes-gzip" && sent.revision == 15)
        let expected = LiveEvent.changes(after: 12, revision: 15, response: json)
        #expect(try sent.inflated() == expected)
        let bytes = sent.serverSentEvent + LiveEvent.keepAlive + Self.events[0].serverSentEvent
        for cut in stride(from: 0, through: bytes.count, by: 97) {
            #expect(try Self.liveEvents(Self.parse([bytes[..<cut], bytes[cut...]])) == [expected, Self.events[0]], "cut at \(cut)")
        }
    }

    @Test func base64_roundTripsEveryLength_andRefusesWhatIsNotBase64() {
        for count in 0...70 {
            let bytes = (0..<count).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
            #expect(Base64.decode(Base64.encode(bytes)[...]) == bytes, "\(count) bytes")
        }
        #expect(Base64.encode(Array("Man".utf8)) == Array("TWFu".utf8))
        #expect(Base64.encode(Array("Ma".utf8)) == Array("TWE=".utf8))
        #expect(Base64.encode(Array("M".utf8)) == Array("TQ==".utf8))
        for bad in ["TWE", "TW=u", "TQ==TQ==", "TW\nFu", "TWF*", "=TWF", "TWFu "] {
            #expect(Base64.decode(Array(bad.utf8)[...]) == nil, "\(bad)")
        }
    }

    /// Not base64, not gzip, a gzip stream cut short, one that inflates past the limit: each
    /// a clear error, never a page.
    @Test func malformedCompressedChanges_throwInvalidValue() throws {
        let json = Array(repeating: UInt8(ascii: " "), count: LiveEvent.maxInflatedBytes + 1)
        let gzip = Gzip.compress(Array(#"{"maxRevision":2,"changeSets":[]}"#.utf8))
        let bodies: [[UInt8]] = [
            Array("not base64!".utf8), Base64.encode(Array("not gzip".utf8)), Base64.encode(Array(gzip.dropLast(9))),
            Base64.encode(Gzip.compress(json)),
        ]
        for body in bodies {
            #expect(throws: WireError.self) { try LiveEvent(type: "changes-gzip", id: "2", data: Array("1\n".utf8) + body) }
        }
        #expect(throws: WireError.self) { try LiveEvent(type: "changes-gzip", id: "2", data: Array("1".utf8)) }
    }

    @Test(arguments: [
        ("ready", "7", "seven"), ("ready", "7", ""), ("ready", "7", "-1"), ("poke", "1", "1 "),
        ("poke", "1", "99999999999999999999"), ("changes", "5", "3"), ("changes", nil, "3\n{}"),
        ("changes", "3", "3\n{}"), ("changes", "x", "3\n{}"), ("changes", "5", "a\n{}"), ("message", "1", "1"),
    ] as [(String, String?, String)])
    func malformedLiveEvent_throwsInvalidValue(type: String, id: String?, data: String) {
        let error = #expect(throws: WireError.self) { try LiveEvent(type: type, id: id, data: Array(data.utf8)) }
        #expect(error?.code == .invalidValue)
    }
}
