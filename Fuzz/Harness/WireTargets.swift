import FieldMerge
import FieldMergeProtocol

/// The schema the wire targets decode against: the case study's entities (the protocol
/// vectors' seeds), `lists` (vector 07), and an entity with every field type.
let wireSchema: Schema = {
    let screens = Entity("screens", fields: [Field("name", .text)])
    let instances = Entity("screen_instances", fields: [
        Field("screen_id", .reference(to: "screens", onDelete: .cascade)),
        Field("date", .date), Field("comment", .text),
    ])
    let items = Entity("screen_instance_items", fields: [
        Field("screen_instance_id", .reference(to: "screen_instances", onDelete: .cascade)),
        Field("numeric_value", .integer),
    ])
    let lists = Entity("lists", fields: [Field("name", .text)])
    let everything = Entity("everything", fields: [
        Field("i", .integer, strategy: .counter), Field("r", .real), Field("t", .text, strategy: .text),
        Field("b", .bool), Field("d", .date), Field("x", .blob), Field("s", .textSet, strategy: .union),
        Field("l", .reference(to: "lists", onDelete: .setNull)),
    ])
    do { return try Schema([screens, instances, items, lists, everything]) } catch {
        fatalError("the fuzz wire schema is invalid: \(error)")
    }
}()

/// Small limits, so that depth and size refusals are reached by the fuzzer's inputs.
let wireCodec = WireCodec(schema: wireSchema, limits: WireLimits(maxDepth: 16, maxBytes: 1 << 20, maxDecompressedBytes: 1 << 20))

/// Any bytes: a request or a `WireError`, never a crash; a request decoded re-encodes to
/// bytes that decode to the same request.
func fuzzWireRequest(_ bytes: UnsafeRawBufferPointer) {
    checkRoundTrip(bytes, "request", decode: wireCodec.decodeRequest, encode: wireCodec.encode)
}

/// The same for responses; and the head a client reads from a response's first bytes
/// (`ResponseHead`) never contradicts what the whole body decodes to: the same
/// `maxRevision`, and `hasMore` only when the body says so (a body that writes `hasMore`
/// later than FieldMerge's server does has a head that misses it, which only costs the
/// client its prefetch).
func fuzzWireResponse(_ bytes: UnsafeRawBufferPointer) {
    checkRoundTrip(bytes, "response", decode: wireCodec.decodeResponse, encode: wireCodec.encode)
    guard let head = ResponseHead(json: Array(bytes.prefix(ResponseHead.length))),
          let response = try? wireCodec.decodeResponse(bytes)
    else { return }
    require(
        head.maxRevision == response.maxRevision && (!head.hasMore || response.hasMore),
        "the head \(head) contradicts the response (maxRevision \(response.maxRevision), hasMore \(response.hasMore))")
}

private func checkRoundTrip<Message: Equatable>(
    _ bytes: UnsafeRawBufferPointer, _ what: String,
    decode: (UnsafeRawBufferPointer) throws(WireError) -> Message, encode: (Message) -> [UInt8]
) {
    guard let message = try? decode(bytes) else { return }
    let encoded = encode(message)
    do {
        let again = try encoded.withUnsafeBytes { (encoded) throws(WireError) in try decode(encoded) }
        require(again == message, "a \(what) changed through encode and decode:\n\(message)\n\(again)")
    } catch {
        fatalError("fuzz property failed: an encoded \(what) does not decode: \(error)\n\(String(decoding: encoded, as: UTF8.self))")
    }
}
