import FieldMerge

/// Reads and writes sync bodies as JSON, typed through a schema.
///
/// The wire format is the objc.io case study's (see `Specs/protocol.md`):
/// ```json
/// { "maxRevision": 1000,
///   "changeSets": [
///     { "types": ["screen_instances"],
///       "screen_instances": { "create": [-10], "update": [], "delete": [],
///         "attributes": { "-10": { "screen_id": 749, "date": "2014-02-01 13:15:23.487+01" } } } } ] }
/// ```
/// plus FieldMerge's optional extensions: `"__stamps__": {"field": [clock, replica]}` in a
/// record's attributes, `"clientID"`, `"requestID"`, `"limit"` (requests) and `"hasMore"`
/// (responses) at the top level.
///
/// **Values** are typed by their field: integers and references are JSON integers; reals
/// JSON numbers (integers accepted), written in their shortest round-trip form; text JSON
/// strings; bools `true`/`false`; dates `"2014-02-01 13:15:23.487+00"`, always written in
/// UTC with milliseconds (years beyond 0...9999 with a sign or more digits) and read with
/// any `±HH` or `±HH:MM` offset, `Z`, a `T` separator, 0–3 fraction digits, or as an integer
/// of milliseconds since 1970; blobs standard base64 with padding; text sets arrays of
/// strings; any field may be `null`. A stamp is `[clock, replica]`, each part a JSON integer,
/// or a string of decimal digits when it is 2^63 or more (as `RecordDocument` writes them);
/// a stamp under `"*"` is every field's not named (written for the stamp most fields share,
/// when none lacks one, which nearly halves a freshly seeded record);
/// ``Stamp/none`` is left out of `"__stamps__"`, so a record whose stamps are all none
/// travels as `"__stamps__": {}` and one without stamps has no such key. Record ids (list
/// entries and attribute keys, the latter in canonical decimal) span all of Int64;
/// `maxRevision` and `revision` are non-negative; `limit` is within 1...2^31 − 1;
/// `"hasMore"` is written only when true.
///
/// **Decoding** is strict where the schema speaks and lenient only where the format must
/// grow: unknown top-level keys are skipped (after checking they are well-formed JSON
/// within ``WireLimits/maxDepth``), so a newer peer can add extensions; an unknown entity,
/// field or entity-object key, a wrong type, a duplicate key (where the key is read: two
/// skipped unknown keys of one name are not compared), invalid UTF-8 (`malformedJSON`) or a
/// lone surrogate (`invalidValue`) is a ``WireError`` carrying the byte offset. A change
/// set's `types` and its entity objects must match one to one. Top-level extension keys may be
/// `null`, meaning absent. Missing `create`, `update`, `delete` or `attributes` lists read
/// as empty. The codec checks the shape of a body, not its meaning: whether every
/// attribute's id is also listed under `create`, `update` or `delete` is the server's
/// business.
///
/// **Encoding** writes compact JSON (no whitespace) with keys in a fixed order. It expects
/// a model that fits the schema, and traps otherwise (a programming error, not input):
/// every entity in the schema, `values` (and `stamps`, when present) exactly as wide as
/// the entity, every present value of its field's type, reals finite (JSON has no NaN or
/// infinity), `limit` within 1...2^31 − 1.
public struct WireCodec: Sendable {
    public let schema: Schema
    /// ``Schema/fingerprint``, which requests carry and the decoder checks.
    public let schemaFingerprint: String
    public let limits: WireLimits
    let tables: [_EntityTable]
    let entityIndex: [String: Int]
    /// Whether any entity is retired: change sets are then written without them.
    let hasRetiredEntities: Bool
    /// Older versions of ``schema`` whose requests this codec reads, by fingerprint
    /// (``init(schema:limits:older:)``).
    var olderVersions: [String: WireVersion] = [:]

    public init(schema: Schema, limits: WireLimits = WireLimits()) {
        self.schema = schema
        schemaFingerprint = schema.fingerprint
        self.limits = limits
        self.tables = schema.entities.map(_EntityTable.init)
        var index: [String: Int] = [:]
        for (position, entity) in schema.entities.enumerated() { index[entity.name] = position }
        self.entityIndex = index
        hasRetiredEntities = schema.entities.contains(where: \.retired)
    }

    /// The JSON body of a request.
    public func encode(_ request: SyncRequest) -> [UInt8] {
        var writer = _Writer(capacity: estimatedSize(request.changeSets))
        writeRequest(request, to: &writer)
        return writer.finish()
    }

    /// The JSON body of a request whose `requestID` is a digest of that body: `prefix`
    /// followed by 16 hex digits of FNV-1a (64 bits) over the body written with those digits
    /// as zeros. The same request encodes to the same id, so a retry after a lost answer is
    /// recognised; the body is written once.
    ///
    /// - Parameter prefix: ASCII letters, digits and `-` only (it is written unescaped).
    public func encode(_ request: SyncRequest, requestIDPrefix prefix: String) -> (body: [UInt8], requestID: String) {
        precondition(
            prefix.utf8.allSatisfy { $0 == 0x2D || (0x30...0x39).contains($0) || (0x41...0x5A).contains($0) || (0x61...0x7A).contains($0) },
            "a request id prefix is ASCII letters, digits and '-'")
        var request = request
        request.requestID = prefix + String(repeating: "0", count: 16)
        var body = encode(request)
        // The id stands among the first keys, before the change sets.
        let marker = Array("\"requestID\":\"\(prefix)".utf8)
        var start = 0
        while !body[start..<start + marker.count].elementsEqual(marker) { start += 1 }
        start += marker.count
        var digest: UInt64 = 0xCBF2_9CE4_8422_2325
        for byte in body { digest = (digest ^ UInt64(byte)) &* 0x0000_0100_0000_01B3 }
        let hex = Array("0123456789abcdef".utf8)
        for position in 0..<16 {
            body[start + position] = hex[Int(truncatingIfNeeded: digest >> UInt64(60 - 4 * position)) & 0xF]
        }
        let id = prefix + String(decoding: body[start..<start + 16], as: UTF8.self)
        return (body, id)
    }

    /// The JSON body of a response.
    public func encode(_ response: SyncResponse) -> [UInt8] {
        var writer = _Writer(capacity: estimatedSize(response.changeSets))
        writeResponse(response, to: &writer)
        return writer.finish()
    }

    /// The JSON body of an error response: `{"error":"<code>","message":"..."}`, and
    /// `"schema": [lines]` when the error carries the server's schema outline.
    public func encode(_ error: WireErrorBody) -> [UInt8] {
        var writer = _Writer(capacity: 64 + error.message.utf8.count)
        writer.raw("{\"error\":")
        writer.string(error.error)
        writer.raw(",\"message\":")
        writer.string(error.message)
        if let schema = error.schema {
            writer.raw(",\"schema\":[")
            for (index, line) in schema.enumerated() {
                if index > 0 { writer.byte(UInt8(ascii: ",")) }
                writer.string(line)
            }
            writer.byte(UInt8(ascii: "]"))
        }
        writer.byte(UInt8(ascii: "}"))
        return writer.finish()
    }

    /// Reads a request body.
    ///
    /// - Throws: ``WireError`` with the offending byte offset; never returns part of a body.
    /// - Complexity: O(*n*) in the body's length, one pass, no intermediate tree.
    public func decodeRequest(_ bytes: [UInt8]) throws(WireError) -> SyncRequest {
        try bytes.withUnsafeBufferPointer { (buffer) throws(WireError) in try decodeRequest(UnsafeRawBufferPointer(buffer)) }
    }

    /// Reads a request body from raw memory (a network buffer, a memory-mapped file).
    public func decodeRequest(_ bytes: UnsafeRawBufferPointer) throws(WireError) -> SyncRequest {
        try checkSize(bytes)
        var parser = _Parser(bytes, limits: limits)
        do {
            return try parser.parseRequest(self)
        } catch {
            // A request of an older version whose fingerprint came after its change sets:
            // read again with that version's codec.
            guard !olderVersions.isEmpty else { throw error }
            var peek = _Parser(bytes, limits: limits)
            guard let fingerprint = try? peek.peekSchemaFingerprint(), let version = olderVersions[fingerprint] else { throw error }
            var again = _Parser(bytes, limits: limits)
            return try again.parseRequest(version.codec)
        }
    }

    /// Reads a response body.
    public func decodeResponse(_ bytes: [UInt8]) throws(WireError) -> SyncResponse {
        try bytes.withUnsafeBufferPointer { (buffer) throws(WireError) in try decodeResponse(UnsafeRawBufferPointer(buffer)) }
    }

    /// Reads a response body from raw memory.
    public func decodeResponse(_ bytes: UnsafeRawBufferPointer) throws(WireError) -> SyncResponse {
        try checkSize(bytes)
        var parser = _Parser(bytes, limits: limits)
        return try parser.parseResponse(self)
    }

    /// Reads an error body `{"error": ..., "message": ...}` (other keys are skipped).
    public func decodeError(_ bytes: [UInt8]) throws(WireError) -> WireErrorBody {
        try bytes.withUnsafeBufferPointer { (buffer) throws(WireError) in
            try checkSize(UnsafeRawBufferPointer(buffer))
            var parser = _Parser(UnsafeRawBufferPointer(buffer), limits: limits)
            return try parser.parseErrorBody()
        }
    }

    func checkSize(_ bytes: UnsafeRawBufferPointer) throws(WireError) {
        guard bytes.count <= limits.maxBytes else {
            throw WireError(.tooLarge, "body of \(bytes.count) bytes exceeds the limit of \(limits.maxBytes)", offset: limits.maxBytes)
        }
    }

    /// A first guess at the encoded size, so the writer rarely grows.
    private func estimatedSize(_ changeSets: [ChangeSet]) -> Int {
        var size = 256
        for changeSet in changeSets {
            for changes in changeSet.entities {
                let perRecord = entityIndex[changes.entity].map { 48 + tables[$0].estimatedRecordSize } ?? 64
                size += 128 + 24 * (changes.create.count + changes.update.count + changes.delete.count)
                size += changes.records.count * perRecord
            }
        }
        return size
    }
}

/// What the codec needs of one entity, prepared once.
struct _EntityTable: Sendable {
    /// The value kind of a field (``FieldMerge/ValueKind`` without null), by its name.
    enum Kind: String, Sendable { case integer, real, text, bool, date, blob, textSet }

    let name: String
    /// Field names as UTF-8 (ASCII: the schema allows nothing else).
    let fieldNames: [[UInt8]]
    /// `"name":` per field, ready to copy.
    let fieldKeys: [[UInt8]]
    let kinds: [Kind]
    var fieldCount: Int { kinds.count }
    let estimatedRecordSize: Int
    /// The `"name":` keys again, in memory that the decoder's fast path reads directly.
    let keys: _KeyStorage
    /// A record's starting values and stamps (all null, all none), copied per record.
    let nullValues: ContiguousArray<Value>
    let noStamps: ContiguousArray<Stamp>
    /// The fields that travel: all but the retired ones (``Field/retired``), which are
    /// never written and refused when read.
    let synced: FieldMask
    var hasRetired: Bool { synced.count != fieldCount }
    /// The entity is retired (``Entity/retired``): its changes are never written and
    /// refused when read.
    let retired: Bool

    init(_ entity: Entity) {
        name = entity.name
        retired = entity.retired
        synced = FieldMask(bits: entity.allFields.bits & ~entity.retiredFields.bits)
        fieldNames = entity.fields.map { Array($0.name.utf8) }
        fieldKeys = entity.fields.map { Array("\"\($0.name)\":".utf8) }
        kinds = entity.fields.map { Kind(rawValue: $0.type.valueKind.rawValue)! }
        estimatedRecordSize = fieldKeys.reduce(0) { $0 + 2 * $1.count + 48 }
        keys = _KeyStorage(fieldKeys)
        nullValues = ContiguousArray(repeating: .null, count: entity.fields.count)
        noStamps = ContiguousArray(repeating: .none, count: entity.fields.count)
    }

    /// The position of the field whose name is `key`, trying `hint` first (fields usually
    /// arrive in schema order).
    @inline(__always)
    func fieldIndex(_ key: UnsafeBufferPointer<UInt8>, hint: Int) -> Int? {
        if hint < fieldNames.count && Self.same(fieldNames[hint], key) { return hint }
        for index in fieldNames.indices where index != hint && Self.same(fieldNames[index], key) { return index }
        return nil
    }

    @inline(__always)
    static func same(_ name: [UInt8], _ key: UnsafeBufferPointer<UInt8>) -> Bool {
        guard name.count == key.count else { return false }
        return name.withUnsafeBufferPointer { stored in
            stored.count == 0 || memoryEqual(stored.baseAddress!, key.baseAddress!, stored.count)
        }
    }
}

/// Byte strings in one immutable allocation, for hot loops that should not touch arrays.
final class _KeyStorage: @unchecked Sendable {  // immutable after init
    private let bytes: UnsafeMutablePointer<UInt8>
    private let starts: UnsafeMutablePointer<Int>
    let count: Int

    init(_ keys: [[UInt8]]) {
        count = keys.count
        let total = keys.reduce(0) { $0 + $1.count }
        bytes = .allocate(capacity: max(total, 1))
        starts = .allocate(capacity: keys.count + 1)
        var offset = 0
        for (index, key) in keys.enumerated() {
            starts[index] = offset
            for byte in key { bytes[offset] = byte; offset += 1 }
        }
        starts[keys.count] = offset
    }

    deinit {
        bytes.deallocate()
        starts.deallocate()
    }

    @inline(__always) func start(_ index: Int) -> UnsafePointer<UInt8> { UnsafePointer(bytes + starts[index]) }
    @inline(__always) func length(_ index: Int) -> Int { starts[index &+ 1] &- starts[index] }
}

/// Whether `count` bytes at `a` and `b` are equal.
@inline(__always)
func memoryEqual(_ a: UnsafePointer<UInt8>, _ b: UnsafePointer<UInt8>, _ count: Int) -> Bool {
    var index = 0
    while index + 8 <= count {
        if UnsafeRawPointer(a + index).loadUnaligned(as: UInt64.self)
            != UnsafeRawPointer(b + index).loadUnaligned(as: UInt64.self) { return false }
        index += 8
    }
    while index < count {
        if a[index] != b[index] { return false }
        index += 1
    }
    return true
}
