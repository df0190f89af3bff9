import FieldMerge

/// Compact binary encodings of stamps and ancestor records, for the store's metadata columns.
///
/// Both encodings start with a format version byte (currently `1`) so the layout can evolve;
/// decoders reject versions they do not know. Varints are unsigned LEB128 (7 bits a byte,
/// least significant group first, high bit set on every byte but the last), at most 10 bytes,
/// never padded: a multi-byte varint whose last byte is `0x00` is rejected. Signed integers
/// are zigzag-mapped first (`0, -1, 1, -2, …` → `0, 1, 2, 3, …`).
///
/// ## Stamps
///
/// A stamp's clock is split into its 48-bit milliseconds and 16-bit counter (together they
/// cover every `UInt64`). Stamps are written as runs of equal stamps, each relative to the
/// stamp before it (the first run to `Stamp.none`: replica 0, milliseconds 0, counter 0):
///
/// ```
/// stamps  = version(0x01) run*
/// run     = control:varint [replica:varint] [ms:varint] [counter:varint]
/// control = (repeats << 3) | 0b100 counter present | 0b010 ms present | 0b001 replica present
///   replica: the replica id, present only if it differs from the previous stamp's
///   ms:      zigzag(milliseconds − previous milliseconds), present only if nonzero
///   counter: the counter itself (0...65535), present only if it differs from the previous
/// ```
///
/// A run stands for `repeats + 1` copies of its stamp. Runs are maximal, so only the first
/// run may have no field present; that and the rules above make the encoding canonical: one
/// list of stamps has exactly one encoding, and decoders reject every other. The stamp count
/// is not stored (it is the entity's field count). Eight equal stamps take 1 + 1 + replica
/// (≤ 10) + milliseconds (6 today, ≤ 7) + counter (0 if zero, ≤ 3) bytes: 18 for a random
/// 64-bit replica today, 22 at most.
///
/// ## Ancestors
///
/// ```
/// ancestor = version(0x01) flags:u8 revision:zigzag-varint value{n} run*
/// flags    = 0b1 if the record has a tombstone; the other bits are zero
/// value    = 0x00                                          null
///          | 0x01 zigzag-varint                            integer (and reference)
///          | 0x02 u64-little-endian                        real, its exact bit pattern
///          | 0x03 length:varint utf8{length}               text, byte-exact
///          | 0x04 | 0x05                                   bool false | true
///          | 0x06 zigzag-varint                            date (milliseconds)
///          | 0x07 length:varint byte{length}               blob
///          | 0x08 count:varint (length:varint utf8{length}){count}   text set
/// ```
///
/// Values come in the entity's field order (`n` is its field count), each of a kind that fits
/// its field. Then come the stamps as in ``encodeStamps(_:into:)`` without the version byte:
/// `n` field stamps followed by the tombstone, if any, as one more stamp. Text-set members
/// are strictly ascending by their UTF-8 bytes (the same order as `TextSet`'s).
public enum RecordCoding {
    /// The format version both encodings start with.
    public static let formatVersion: UInt8 = 1

    /// Appends the encoding of `stamps` to `buffer`.
    ///
    /// The layout is documented on ``RecordCoding``: a version byte, then runs of equal stamps,
    /// each stored relative to the previous one.
    ///
    /// - Complexity: O(*n*) in the number of stamps.
    public static func encodeStamps(_ stamps: some Collection<Stamp>, into buffer: inout [UInt8]) {
        buffer.append(formatVersion)
        var writer = _StampWriter()
        // One call through the generic witness, then a concrete loop (arrays, the usual case).
        let done: Void? = stamps.withContiguousStorageIfAvailable { contiguous in
            for stamp in contiguous { writer.add(stamp, to: &buffer) }
        }
        if done == nil {
            for stamp in stamps { writer.add(stamp, to: &buffer) }
        }
        writer.finish(&buffer)
    }

    /// Appends the encoding of an ancestor to `buffer`: the record's values, stamps and
    /// tombstone and the revision the server gave it.
    ///
    /// The record's id and entity name are not stored: the row they live in has them.
    ///
    /// - Precondition: `record` has one value and one stamp per field of `entity`, and every
    ///   value fits its field's type (`Record.validate(against:)` passes).
    /// - Complexity: O(*n*) in the size of the record.
    public static func encodeAncestor(_ record: Record, revision: Int64, entity: Entity, into buffer: inout [UInt8]) {
        let fields = entity.fields
        precondition(
            record.values.count == fields.count && record.stamps.count == fields.count,
            "RecordCoding: \(entity.name)#\(record.id) has \(record.values.count) values and \(record.stamps.count) stamps for \(fields.count) fields"
        )
        buffer.append(formatVersion)
        buffer.append(record.tombstone == nil ? 0 : _flagTombstone)
        _appendVarint(_zigzag(revision), to: &buffer)
        for index in fields.indices {
            let tag = _appendValue(record.values[index], to: &buffer)
            precondition(
                _tag(tag, fits: fields[index].type),
                "RecordCoding: \(entity.name)#\(record.id).\(fields[index].name) holds \(record.values[index].kind) in a \(fields[index].type.name) field"
            )
        }
        var writer = _StampWriter()
        for stamp in record.stamps { writer.add(stamp, to: &buffer) }
        if let tombstone = record.tombstone { writer.add(tombstone, to: &buffer) }
        writer.finish(&buffer)
    }
}

/// Bytes that are not a valid encoding, and where the problem starts.
public struct RecordCodingError: Error, Equatable, Sendable, CustomStringConvertible {
    /// Where, from the start of the bytes given, the item that could not be decoded starts:
    /// a varint, tag, length, payload or stamp run, or the end of the input when a byte is
    /// missing there.
    public var offset: Int
    /// What is wrong, in words.
    public var message: String

    public init(offset: Int, message: String) {
        self.offset = offset
        self.message = message
    }

    public var description: String { "offset \(offset): \(message)" }
}

// MARK: - Encoding

extension RecordCoding {
    static let _flagTombstone: UInt8 = 0b1

    enum _Tag {
        static let null: UInt8 = 0x00
        static let integer: UInt8 = 0x01
        static let real: UInt8 = 0x02
        static let text: UInt8 = 0x03
        static let falseBool: UInt8 = 0x04
        static let trueBool: UInt8 = 0x05
        static let date: UInt8 = 0x06
        static let blob: UInt8 = 0x07
        static let textSet: UInt8 = 0x08
    }

    /// Control bits of a stamp run.
    enum _Run {
        static let replica: UInt64 = 0b001
        static let milliseconds: UInt64 = 0b010
        static let counter: UInt64 = 0b100
        static let shift: UInt64 = 3
    }

    /// Whether a value with tag `tag` fits a field of type `type`.
    @inline(__always)
    static func _tag(_ tag: UInt8, fits type: FieldType) -> Bool {
        switch type {
        case .integer, .reference: return tag == _Tag.integer || tag == _Tag.null
        case .real: return tag == _Tag.real || tag == _Tag.null
        case .text, .attachment: return tag == _Tag.text || tag == _Tag.null
        case .bool: return tag == _Tag.falseBool || tag == _Tag.trueBool || tag == _Tag.null
        case .date: return tag == _Tag.date || tag == _Tag.null
        case .blob: return tag == _Tag.blob || tag == _Tag.null
        case .textSet: return tag == _Tag.textSet || tag == _Tag.null
        }
    }

    @inline(__always)
    static func _zigzag(_ value: Int64) -> UInt64 {
        UInt64(bitPattern: (value &<< 1) ^ (value &>> 63))
    }

    @inline(__always)
    static func _unzigzag(_ value: UInt64) -> Int64 {
        Int64(bitPattern: value &>> 1) ^ -Int64(bitPattern: value & 1)
    }

    @inline(__always)
    static func _appendVarint(_ value: UInt64, to buffer: inout [UInt8]) {
        var value = value
        while value >= 0x80 {
            buffer.append(UInt8(truncatingIfNeeded: value) | 0x80)
            value &>>= 7
        }
        buffer.append(UInt8(truncatingIfNeeded: value))
    }

    @inline(__always)
    static func _appendBytes(_ string: String, to buffer: inout [UInt8]) {
        let utf8 = string.utf8
        _appendVarint(UInt64(utf8.count), to: &buffer)
        buffer.append(contentsOf: utf8)
    }

    /// Appends `value`'s tag and payload; returns the tag.
    static func _appendValue(_ value: Value, to buffer: inout [UInt8]) -> UInt8 {
        switch value {
        case .null:
            buffer.append(_Tag.null)
            return _Tag.null
        case .integer(let integer):
            buffer.append(_Tag.integer)
            _appendVarint(_zigzag(integer), to: &buffer)
            return _Tag.integer
        case .real(let real):
            buffer.append(_Tag.real)
            withUnsafeBytes(of: real.bitPattern.littleEndian) { buffer.append(contentsOf: $0) }
            return _Tag.real
        case .text(let text):
            buffer.append(_Tag.text)
            _appendBytes(text, to: &buffer)
            return _Tag.text
        case .bool(let bool):
            let tag = bool ? _Tag.trueBool : _Tag.falseBool
            buffer.append(tag)
            return tag
        case .date(let milliseconds):
            buffer.append(_Tag.date)
            _appendVarint(_zigzag(milliseconds), to: &buffer)
            return _Tag.date
        case .blob(let bytes):
            buffer.append(_Tag.blob)
            _appendVarint(UInt64(bytes.count), to: &buffer)
            buffer.append(contentsOf: bytes)
            return _Tag.blob
        case .textSet(let set):
            buffer.append(_Tag.textSet)
            _appendVarint(UInt64(set.count), to: &buffer)
            for member in set.elements { _appendBytes(member, to: &buffer) }
            return _Tag.textSet
        }
    }

    /// Writes stamps as maximal runs, each relative to the previous run's stamp.
    struct _StampWriter {
        var previous = Stamp(clock: 0, replica: ReplicaID(0))  // Stamp.none, without its lazy global
        var pending = Stamp(clock: 0, replica: ReplicaID(0))
        var repeats: UInt64 = 0
        var hasPending = false

        @inline(__always)
        mutating func add(_ stamp: Stamp, to buffer: inout [UInt8]) {
            if hasPending {
                if stamp == pending {
                    repeats &+= 1
                    return
                }
                flush(&buffer)
            }
            pending = stamp
            repeats = 0
            hasPending = true
        }

        mutating func finish(_ buffer: inout [UInt8]) {
            if hasPending { flush(&buffer) }
            hasPending = false
        }

        private mutating func flush(_ buffer: inout [UInt8]) {
            let stamp = pending
            var control = repeats &<< _Run.shift
            let sameReplica = stamp.replica == previous.replica
            let milliseconds = Int64(bitPattern: stamp.clock &>> 16)
            let delta = milliseconds &- Int64(bitPattern: previous.clock &>> 16)
            let counter = stamp.clock & 0xFFFF
            let sameCounter = counter == previous.clock & 0xFFFF
            if !sameReplica { control |= _Run.replica }
            if delta != 0 { control |= _Run.milliseconds }
            if !sameCounter { control |= _Run.counter }
            RecordCoding._appendVarint(control, to: &buffer)
            if !sameReplica { RecordCoding._appendVarint(stamp.replica.rawValue, to: &buffer) }
            if delta != 0 { RecordCoding._appendVarint(RecordCoding._zigzag(delta), to: &buffer) }
            if !sameCounter { RecordCoding._appendVarint(counter, to: &buffer) }
            previous = stamp
        }
    }
}
