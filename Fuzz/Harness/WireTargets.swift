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
    guard let request = try? wireCodec.decodeRequest(bytes) else { return }
    let encoded = wireCodec.encode(request)
    do {
        let again = try wireCodec.decodeRequest(encoded)
        require(again == request, "a request changed through encode and decode:\n\(request)\n\(again)")
    } catch {
        fatalError("fuzz property failed: an encoded request does not decode: \(error)\n\(String(decoding: encoded, as: UTF8.self))")
    }
}

/// The same for responses.
func fuzzWireResponse(_ bytes: UnsafeRawBufferPointer) {
    guard let response = try? wireCodec.decodeResponse(bytes) else { return }
    let encoded = wireCodec.encode(response)
    do {
        let again = try wireCodec.decodeResponse(encoded)
        require(again == response, "a response changed through encode and decode:\n\(response)\n\(again)")
    } catch {
        fatalError("fuzz property failed: an encoded response does not decode: \(error)\n\(String(decoding: encoded, as: UTF8.self))")
    }
}
