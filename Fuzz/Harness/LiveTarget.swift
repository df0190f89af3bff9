import FieldMergeProtocol

/// The first byte picks the parser's limit (low 2 bits: 8 B … 1 MiB); the next two, the
/// point where the stream is cut in two; the rest is the event stream. Fed whole, cut in two
/// there, or (up to 512 bytes) a byte at a time, the stream gives the same messages, the
/// same end state (last event ID, retry, what `finish` drops) or the same `WireError`, which
/// is only `tooLarge`. No message's data passes the limit. Each message reads as a
/// `LiveEvent` or fails with `invalidValue`; an event read, written back as SSE text (when
/// its response has no line break) and parsed again, is the same event.
func fuzzLiveEvents(_ bytes: UnsafeRawBufferPointer) {
    guard bytes.count >= 3 else { return }
    let limit = [8, 64, 4_096, 1 << 20][Int(bytes[0] & 3)]
    let stream = Array(bytes.dropFirst(3))
    let cut = (Int(bytes[1]) << 8 | Int(bytes[2])) % (stream.count + 1)

    let whole = parseLive([stream[...]], limit: limit)
    let halves = parseLive([stream[..<cut], stream[cut...]], limit: limit)
    require(whole == halves, "cut at \(cut) of \(stream.count) bytes: \(halves) differs from \(whole)")
    if stream.count <= 512 {
        let bytewise = parseLive(stream.indices.map { stream[$0...$0] }, limit: limit)
        require(whole == bytewise, "a byte at a time: \(bytewise) differs from \(whole)")
    }
    guard case .success(let outcome) = whole else {
        if case .failure(let error) = whole { require(error.code == .tooLarge, "the parser failed with \(error)") }
        return
    }
    for message in outcome.messages {
        require(message.data.count <= limit, "\(message.data.count) bytes of data past the limit \(limit)")
        require(!message.type.isEmpty, "a message without a type")
        let event: LiveEvent
        do {
            event = try LiveEvent(type: message.type, id: message.id, data: message.data)
        } catch {
            require(error.code == .invalidValue, "a live event failed with \(error)")
            continue
        }
        require(event.type == message.type, "\(event) read from a '\(message.type)' message")
        if case .changes(_, _, let response) = event, response.contains(where: { $0 == 0x0A || $0 == 0x0D }) { continue }
        var parser = ServerSentEventParser()
        do {
            let again = try parser.feed(event.serverSentEvent)
            require(again.count == 1, "\(event) wrote \(again.count) messages")
            let back = try LiveEvent(type: again[0].type, id: again[0].id, data: again[0].data)
            require(back == event, "\(event) read back as \(back)")
        } catch {
            fatalError("fuzz property failed: \(event) written as SSE did not read back: \(error)")
        }
    }
}

/// What a parser made of a stream fed in `chunks`.
struct LiveParse: Equatable {
    var messages: [ServerSentEventParser.Message] = []
    var lastEventID: String?
    var retry: Duration?
    var dropped = false
}

func parseLive(_ chunks: [ArraySlice<UInt8>], limit: Int) -> Result<LiveParse, WireError> {
    Result { () throws(WireError) in
        var parser = ServerSentEventParser(maxBytes: limit)
        var parse = LiveParse()
        for chunk in chunks { parse.messages += try parser.feed(chunk) }
        parse.lastEventID = parser.lastEventID
        parse.retry = parser.retry
        parse.dropped = parser.finish()
        return parse
    }
}
