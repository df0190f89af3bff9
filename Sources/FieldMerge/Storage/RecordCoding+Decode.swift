import FieldMerge

extension RecordCoding {
    /// Decodes `count` stamps written by ``encodeStamps(_:into:)``.
    ///
    /// - Throws: ``RecordCodingError`` if the bytes are not exactly one encoding of `count`
    ///   stamps: an unknown version, truncated or trailing bytes, a malformed varint, a value
    ///   out of range or a non-canonical form.
    public static func decodeStamps(
        _ bytes: UnsafeRawBufferPointer, count: Int
    ) throws(RecordCodingError) -> ContiguousArray<Stamp> {
        guard count >= 0 else { throw RecordCodingError(offset: 0, message: "negative stamp count \(count)") }
        var reader = _Reader(bytes)
        try reader.version()
        var stamps = ContiguousArray<Stamp>()
        // A few bytes can claim any count: reserve what a record could need, grow beyond.
        stamps.reserveCapacity(min(count, Entity.maxFields + 1))
        try reader.stamps(count, into: &stamps)
        try reader.end()
        return stamps
    }

    /// Decodes an ancestor written by ``encodeAncestor(_:revision:entity:into:)`` for `entity`,
    /// giving the record the id `id`.
    ///
    /// - Throws: ``RecordCodingError`` if the bytes are not exactly one valid encoding: an
    ///   unknown version or flag, truncated or trailing bytes, a malformed varint, a length
    ///   past the end, an unknown tag, a value that does not fit its field, invalid UTF-8,
    ///   text-set members out of order, or a non-canonical form.
    public static func decodeAncestor(
        _ bytes: UnsafeRawBufferPointer, entity: Entity, id: Int64
    ) throws(RecordCodingError) -> (record: Record, revision: Int64) {
        var reader = _Reader(bytes)
        try reader.version()
        let flagsOffset = reader.offset
        let flags = try reader.byte()
        guard flags & ~_flagTombstone == 0 else {
            throw RecordCodingError(offset: flagsOffset, message: "unknown flags 0x\(String(flags, radix: 16))")
        }
        let revision = _unzigzag(try reader.varint())
        let count = entity.fields.count
        var values = ContiguousArray<Value>()
        values.reserveCapacity(count)
        // Through a buffer pointer, so that reading a field's type does not copy the field.
        try entity.fields.withUnsafeBufferPointer { (fields) throws(RecordCodingError) in
            for index in fields.indices {
                values.append(try reader.value(field: index, of: fields))
            }
        }
        let hasTombstone = flags & _flagTombstone != 0
        var stamps = ContiguousArray<Stamp>()
        stamps.reserveCapacity(count + 1)
        try reader.stamps(hasTombstone ? count + 1 : count, into: &stamps)
        try reader.end()
        let tombstone = hasTombstone ? stamps.removeLast() : nil
        let record = Record(entity: entity.name, id: id, values: values, stamps: stamps, tombstone: tombstone)
        return (record, revision)
    }
}

extension RecordCoding {
    /// A bounds-checked cursor over the bytes being decoded. Every read checks the remaining
    /// length first, so malformed input throws instead of reading past the end.
    struct _Reader {
        let bytes: UnsafeRawBufferPointer
        var offset = 0

        init(_ bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

        @inline(__always)
        var remaining: Int { bytes.count &- offset }

        @inline(__always)
        func fail(_ message: String, at offset: Int) -> RecordCodingError {
            RecordCodingError(offset: offset, message: message)
        }

        mutating func version() throws(RecordCodingError) {
            let version = try byte()
            guard version == RecordCoding.formatVersion else {
                throw fail("unknown format version \(version)", at: 0)
            }
        }

        mutating func end() throws(RecordCodingError) {
            guard offset == bytes.count else { throw fail("\(remaining) trailing bytes", at: offset) }
        }

        @inline(__always)
        mutating func byte() throws(RecordCodingError) -> UInt8 {
            guard offset < bytes.count else { throw fail("truncated", at: offset) }
            let byte = bytes[offset]
            offset &+= 1
            return byte
        }

        /// An unsigned LEB128 varint of at most 10 bytes, without padding.
        @inline(__always)
        mutating func varint() throws(RecordCodingError) -> UInt64 {
            if offset < bytes.count {
                let first = bytes[offset]
                if first < 0x80 {
                    offset &+= 1
                    return UInt64(first)
                }
            }
            return try longVarint()
        }

        mutating func longVarint() throws(RecordCodingError) -> UInt64 {
            let start = offset
            var result: UInt64 = 0
            var shift: UInt64 = 0
            while true {
                guard offset < bytes.count else { throw fail("truncated varint", at: start) }
                let byte = bytes[offset]
                offset &+= 1
                if shift == 63 {
                    guard byte & 0x80 == 0 else { throw fail("varint longer than 10 bytes", at: start) }
                    guard byte <= 1 else { throw fail("varint overflows 64 bits", at: start) }
                }
                result |= UInt64(byte & 0x7F) &<< shift
                if byte & 0x80 == 0 {
                    guard byte != 0 || shift == 0 else { throw fail("padded varint", at: start) }
                    return result
                }
                shift &+= 7
            }
        }

        /// A varint length that fits in the remaining bytes.
        @inline(__always)
        mutating func length() throws(RecordCodingError) -> Int {
            let start = offset
            let length = try varint()
            guard length <= UInt64(remaining) else {
                throw fail("length \(length) exceeds the \(remaining) remaining bytes", at: start)
            }
            return Int(length)
        }

        /// The next `count` bytes, which `length()` has checked are there.
        @inline(__always)
        mutating func take(_ count: Int) -> UnsafeRawBufferPointer {
            let slice = UnsafeRawBufferPointer(rebasing: bytes[offset..<offset &+ count])
            offset &+= count
            return slice
        }

        @inline(__always)
        mutating func text() throws(RecordCodingError) -> (String, UnsafeRawBufferPointer) {
            let count = try length()
            let start = offset
            let utf8 = take(count)
            guard RecordCoding._isValidUTF8(utf8) else { throw fail("invalid UTF-8 in text", at: start) }
            // Valid, so nothing is repaired: the string holds exactly these bytes. (This is
            // faster than `String(validating:as:)`, which is generic in the standard library.)
            return (String(decoding: utf8.assumingMemoryBound(to: UInt8.self), as: UTF8.self), utf8)
        }

        /// A value of field `fields[index]`: its tag, then its payload.
        mutating func value(field index: Int, of fields: UnsafeBufferPointer<Field>) throws(RecordCodingError) -> Value {
            let start = offset
            let tag = try byte()
            guard tag <= _Tag.textSet else { throw fail("unknown value tag 0x\(String(tag, radix: 16))", at: start) }
            guard RecordCoding._tag(tag, fits: fields[index].type) else {
                let field = fields[index]
                throw fail("field '\(field.name)' (\(field.type.name)) cannot hold \(Self.kindName(tag))", at: start)
            }
            switch tag {
            case _Tag.null:
                return .null
            case _Tag.integer:
                return .integer(RecordCoding._unzigzag(try varint()))
            case _Tag.real:
                guard remaining >= 8 else { throw fail("truncated real", at: offset) }
                let bits = bytes.loadUnaligned(fromByteOffset: offset, as: UInt64.self)
                offset &+= 8
                return .real(Double(bitPattern: UInt64(littleEndian: bits)))
            case _Tag.text:
                return .text(try text().0)
            case _Tag.falseBool:
                return .bool(false)
            case _Tag.trueBool:
                return .bool(true)
            case _Tag.date:
                return .date(RecordCoding._unzigzag(try varint()))
            case _Tag.blob:
                let count = try length()
                return .blob([UInt8](take(count)))
            default:
                return .textSet(try textSet())
            }
        }

        mutating func textSet() throws(RecordCodingError) -> TextSet {
            let start = offset
            let count = try varint()
            // Every member takes at least its length byte: a larger count cannot be genuine.
            guard count <= UInt64(remaining) else {
                throw fail("text set count \(count) exceeds the \(remaining) remaining bytes", at: start)
            }
            var members: [String] = []
            members.reserveCapacity(Int(count))
            var previous = UnsafeRawBufferPointer(start: nil, count: 0)
            for index in 0..<Int(count) {
                let memberStart = offset
                let (member, utf8) = try text()
                // UTF-8 byte order is Unicode scalar order, the order TextSet keeps.
                guard index == 0 || previous.lexicographicallyPrecedes(utf8) else {
                    throw fail("text set members out of order or repeated", at: memberStart)
                }
                previous = utf8
                members.append(member)
            }
            return TextSet(members)
        }

        /// `count` stamps as runs (see ``RecordCoding``), appended to `stamps`.
        mutating func stamps(_ count: Int, into stamps: inout ContiguousArray<Stamp>) throws(RecordCodingError) {
            var previous = Stamp(clock: 0, replica: ReplicaID(0))  // Stamp.none
            var decoded = 0
            while decoded < count {
                let start = offset
                let control = try varint()
                let flags = control & (_Run.replica | _Run.milliseconds | _Run.counter)
                guard flags != 0 || decoded == 0 else { throw fail("stamp run repeats the previous stamp", at: start) }
                let repeats = control &>> _Run.shift
                guard repeats < UInt64(count &- decoded) else {
                    throw fail("stamp run of \(repeats) + 1 exceeds the \(count - decoded) stamps left", at: start)
                }
                var replica = previous.replica
                var milliseconds = previous.clock &>> 16
                var counter = previous.clock & 0xFFFF
                if flags & _Run.replica != 0 {
                    let at = offset
                    let raw = try varint()
                    guard raw != replica.rawValue else { throw fail("stamp replica repeats the previous one", at: at) }
                    replica = ReplicaID(raw)
                }
                if flags & _Run.milliseconds != 0 {
                    let at = offset
                    let delta = RecordCoding._unzigzag(try varint())
                    let (sum, overflow) = Int64(bitPattern: milliseconds).addingReportingOverflow(delta)
                    guard delta != 0, !overflow, sum >= 0, sum <= 0xFFFF_FFFF_FFFF else {
                        throw fail("stamp milliseconds delta \(delta) is zero or out of range", at: at)
                    }
                    milliseconds = UInt64(sum)
                }
                if flags & _Run.counter != 0 {
                    let at = offset
                    let raw = try varint()
                    guard raw <= 0xFFFF, raw != counter else {
                        throw fail("stamp counter \(raw) is out of range or repeats the previous one", at: at)
                    }
                    counter = raw
                }
                let stamp = Stamp(clock: milliseconds &<< 16 | counter, replica: replica)
                let runLength = Int(repeats) &+ 1
                for _ in 0..<runLength { stamps.append(stamp) }
                decoded &+= runLength
                previous = stamp
            }
        }

        static func kindName(_ tag: UInt8) -> String {
            switch tag {
            case _Tag.null: return "null"
            case _Tag.integer: return "integer"
            case _Tag.real: return "real"
            case _Tag.text: return "text"
            case _Tag.falseBool, _Tag.trueBool: return "bool"
            case _Tag.date: return "date"
            case _Tag.blob: return "blob"
            default: return "textSet"
            }
        }
    }
}

extension RecordCoding {
    /// Whether `bytes` is well-formed UTF-8 (Unicode Table 3-7: no overlong forms, no
    /// surrogates, nothing above U+10FFFF), with an eight-bytes-at-a-time ASCII fast path.
    static func _isValidUTF8(_ bytes: UnsafeRawBufferPointer) -> Bool {
        let count = bytes.count
        var index = 0
        while index < count {
            while index &+ 8 <= count {
                let word = bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self)
                if word & 0x8080_8080_8080_8080 != 0 { break }
                index &+= 8
            }
            guard index < count else { return true }
            let lead = bytes[index]
            @inline(__always) func continuation(_ at: Int) -> Bool { bytes[at] & 0xC0 == 0x80 }
            switch lead {
            case 0x00...0x7F:
                index &+= 1
            case 0xC2...0xDF:
                guard count &- index >= 2, continuation(index &+ 1) else { return false }
                index &+= 2
            case 0xE0...0xEF:
                guard count &- index >= 3 else { return false }
                let second = bytes[index &+ 1]
                let low: UInt8 = lead == 0xE0 ? 0xA0 : 0x80  // no overlong forms
                let high: UInt8 = lead == 0xED ? 0x9F : 0xBF  // no surrogates
                guard second >= low, second <= high, continuation(index &+ 2) else { return false }
                index &+= 3
            case 0xF0...0xF4:
                guard count &- index >= 4 else { return false }
                let second = bytes[index &+ 1]
                let low: UInt8 = lead == 0xF0 ? 0x90 : 0x80  // no overlong forms
                let high: UInt8 = lead == 0xF4 ? 0x8F : 0xBF  // nothing above U+10FFFF
                guard second >= low, second <= high, continuation(index &+ 2), continuation(index &+ 3) else {
                    return false
                }
                index &+= 4
            default:
                return false  // a continuation byte, C0, C1 or F5...FF
            }
        }
        return true
    }
}
