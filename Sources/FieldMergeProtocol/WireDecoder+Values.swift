import FieldMerge

/// Reading records: attributes typed by the entity's fields, the protocol's own keys
/// (`revision`, `__oldId__`, `__stamps__`), and values of every field type.
extension _Parser {
    mutating func parseRecord(id: Int64, _ table: _EntityTable) throws(WireError) -> WireRecord {
        var values = table.nullValues
        var present = FieldMask()
        var stamps: ContiguousArray<Stamp>?
        var revision: Int64?, oldID: Int64?
        var seen: UInt16 = 0
        var hint = 0
        // One uniqueness check and copy for the record, not one per field.
        try values.withUnsafeMutableBufferPointer { (values) throws(WireError) in
            if try open(UInt8(ascii: "{"), "an object of attributes") {
                repeat {
                    switch try fieldKey(table, &hint, marking: &present) {
                    case .field(let index): values[index] = try value(table.kinds[index])
                    case .other(let key):
                        switch try known(key, Self.recordKeys, &seen) {
                        case 0: revision = try nonNegativeInt64("revision")
                        case 1: oldID = try int64("__oldId__ (an integer id)")
                        case 2: stamps = try parseStamps(table)
                        default: throw error(.unknownField, "entity '\(table.name)' has no field '\(key.text)'", at: key.offset)
                        }
                    }
                } while try next(UInt8(ascii: "}"))
            }
        }
        return WireRecord(id: id, present: present, values: values, stamps: stamps, revision: revision, oldID: oldID)
    }

    /// The key of the next member of an object keyed by `table`'s fields: `.field` with the
    /// field's index, marked in `seen` and `hint` moved past it (a field twice is a
    /// `duplicateKey`, a retired one an `unknownField`), or `.other` with a key that names no
    /// field.
    @inline(__always)
    private mutating func fieldKey(_ table: _EntityTable, _ hint: inout Int, marking seen: inout FieldMask) throws(WireError) -> _FieldKey {
        skipSpace()
        let keyAt = position
        let index: Int
        if let fast = fastKey(table.keys, hint) {
            index = fast
        } else {
            let key = try key()
            guard let found = table.fieldIndex(key.buffer, hint: hint) else { return .other(key) }
            index = found
        }
        guard !seen.contains(index) else { throw duplicateField(table, index, at: keyAt) }
        guard table.synced.contains(index) else { throw retiredField(table, index, at: keyAt) }
        seen.insert(index)
        hint = index &+ 1
        return .field(index)
    }

    /// The fast path for keys: the field expected next (`hint`), spelled plainly, is
    /// matched with its `"name":` bytes in one comparison. Nil when it is something else.
    @inline(__always)
    private mutating func fastKey(_ keys: _KeyStorage, _ hint: Int) -> Int? {
        guard hint < keys.count else { return nil }
        skipSpace()
        let length = keys.length(hint)
        guard length <= end &- position, memoryEqual(input + position, keys.start(hint), length) else { return nil }
        position &+= length
        return hint
    }

    private func duplicateField(_ table: _EntityTable, _ index: Int, at offset: Int) -> WireError {
        let name = String(decoding: table.fieldNames[index], as: UTF8.self)
        return error(.duplicateKey, "duplicate field '\(name)'", at: offset)
    }

    private func retiredField(_ table: _EntityTable, _ index: Int, at offset: Int) -> WireError {
        let name = String(decoding: table.fieldNames[index], as: UTF8.self)
        return error(.unknownField, "field '\(name)' of '\(table.name)' is retired in this schema version", at: offset)
    }

    /// `{"field": [clock, replica], ...}`, full width with ``Stamp/none`` where absent; a
    /// stamp under `"*"` is every unnamed field's.
    private mutating func parseStamps(_ table: _EntityTable) throws(WireError) -> ContiguousArray<Stamp> {
        var stamps = table.noStamps
        var seen = FieldMask()
        var hint = 0
        var shared: Stamp?
        try stamps.withUnsafeMutableBufferPointer { (stamps) throws(WireError) in
            if try open(UInt8(ascii: "{"), "an object of stamps") {
                repeat {
                    switch try fieldKey(table, &hint, marking: &seen) {
                    case .field(let index): stamps[index] = try stamp()
                    case .other(let key):
                        guard key.equals("*") else {
                            throw error(.unknownField, "stamp for unknown field '\(key.text)' of '\(table.name)'", at: key.offset)
                        }
                        guard shared == nil else { throw error(.duplicateKey, "duplicate stamp '*'", at: key.offset) }
                        shared = try stamp()
                    }
                } while try next(UInt8(ascii: "}"))
            }
            if let shared {
                for index in 0..<stamps.count where !seen.contains(index) && table.synced.contains(index) { stamps[index] = shared }
            }
        }
        return stamps
    }

    /// `[clock, replica]`.
    private mutating func stamp() throws(WireError) -> Stamp {
        _ = try peek()
        let start = position
        guard try open(UInt8(ascii: "["), "a stamp [clock, replica]") else {
            throw error(.invalidValue, "a stamp is [clock, replica], got []", at: start)
        }
        let clock = try uint64("a stamp's clock")
        guard try next(UInt8(ascii: "]")) else {
            throw error(.invalidValue, "a stamp is [clock, replica], got one part", at: start)
        }
        let replica = try uint64("a stamp's replica")
        guard try !next(UInt8(ascii: "]")) else {
            throw error(.invalidValue, "a stamp is [clock, replica], got more parts", at: start)
        }
        return Stamp(clock: clock, replica: ReplicaID(replica))
    }

    /// A value of a field of `kind`, or `null`.
    @inline(__always)
    private mutating func value(_ kind: _EntityTable.Kind) throws(WireError) -> Value {
        let byte = try peek()
        if byte == UInt8(ascii: "n") {
            try literal("null")
            return .null
        }
        switch kind {
        case .integer:
            return .integer(try int64("an integer"))
        case .real:
            return .real(try double("a real"))
        case .text:
            guard byte == UInt8(ascii: "\"") else { throw typeError(expected: "a string") }
            return .text(try string().text)
        case .bool:
            return .bool(try bool("a bool"))
        case .date:
            if byte == UInt8(ascii: "\"") { return .date(try dateString()) }
            guard byte == UInt8(ascii: "-") || Self.isDigit(byte) else {
                throw typeError(expected: "a date (a string or milliseconds since 1970)")
            }
            return .date(try int64("a date in milliseconds since 1970"))
        case .blob:
            guard byte == UInt8(ascii: "\"") else { throw typeError(expected: "a base64 string") }
            return .blob(try base64())
        case .textSet:
            var members: [String] = []
            if try open(UInt8(ascii: "["), "an array of strings") {
                repeat {
                    guard try peek() == UInt8(ascii: "\"") else { throw typeError(expected: "a string in a text set") }
                    members.append(try string().text)
                } while try next(UInt8(ascii: "]"))
            }
            return .textSet(TextSet(members))
        }
    }

    private mutating func dateString() throws(WireError) -> Int64 {
        let span = try string()
        do {
            return try _WireDate.parse(span.buffer)
        } catch {
            let offset = span.start == input + span.offset + 1 ? span.offset + 1 + error.position : span.offset
            throw self.error(
                error.outOfRange ? .outOfRange : .invalidValue, "invalid date '\(span.text)': \(error.message)", at: offset)
        }
    }

    /// Standard base64 with padding; no whitespace, no URL alphabet, unused bits zero.
    private mutating func base64() throws(WireError) -> [UInt8] {
        let span = try string()
        let text = span.buffer
        let length = text.count
        func invalid(_ message: String) -> WireError {
            error(.invalidValue, "invalid base64: \(message)", at: span.offset)
        }
        guard length % 4 == 0 else { throw invalid("length \(length) is not a multiple of 4") }
        if length == 0 { return [] }
        var padding = 0
        if text[length - 1] == UInt8(ascii: "=") { padding = text[length - 2] == UInt8(ascii: "=") ? 2 : 1 }
        let outputLength = length / 4 * 3 - padding
        var failure: String?
        let bytes = _base64Decoding.withUnsafeBufferPointer { table in
            [UInt8](unsafeUninitializedCapacity: outputLength) { output, initialized in
                var out = 0
                var index = 0
                while index < length {
                    let last = index + 4 == length
                    let a = table[Int(text[index])], b = table[Int(text[index + 1])]
                    let c = last && padding == 2 ? 0 : table[Int(text[index + 2])]
                    let d = last && padding >= 1 ? 0 : table[Int(text[index + 3])]
                    guard a | b | c | d < 64 else { failure = "a character outside the standard alphabet"; break }
                    let chunk = UInt32(a) << 18 | UInt32(b) << 12 | UInt32(c) << 6 | UInt32(d)
                    if last {
                        let unused = padding == 2 ? chunk & 0xFFFF : padding == 1 ? chunk & 0xFF : 0
                        guard unused == 0 else { failure = "non-zero bits before the padding"; break }
                    }
                    output[out] = UInt8(truncatingIfNeeded: chunk >> 16)
                    if !last || padding < 2 { output[out + 1] = UInt8(truncatingIfNeeded: chunk >> 8) }
                    if !last || padding < 1 { output[out + 2] = UInt8(truncatingIfNeeded: chunk) }
                    out += last ? 3 - padding : 3
                    index += 4
                }
                initialized = out
            }
        }
        if let failure { throw invalid(failure) }
        return bytes
    }
}

/// Base64 character → 6-bit value; 0xFF for anything else (`=` included).
let _base64Decoding: [UInt8] = {
    var table = [UInt8](repeating: 0xFF, count: 256)
    let alphabet = _base64Alphabet.utf8Start
    for value in 0..<64 { table[Int(alphabet[value])] = UInt8(value) }
    return table
}()

/// A key of an object keyed by an entity's fields (`_Parser.fieldKey`).
enum _FieldKey {
    /// The field at this index.
    case field(Int)
    /// A key that names no field.
    case other(_Span)
}
