import FieldMerge

/// A growable byte buffer that JSON is written into: one allocation most of the time, a
/// capacity check per write, and one copy into an array at the end.
struct _Writer: ~Copyable {
    private(set) var base: UnsafeMutablePointer<UInt8>
    private(set) var count = 0
    private var capacity: Int

    init(capacity: Int) {
        self.capacity = max(capacity, 64)
        base = .allocate(capacity: self.capacity)
    }

    deinit { base.deallocate() }

    /// The bytes written so far.
    func finish() -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            if count > 0 { buffer.baseAddress!.initialize(from: base, count: count) }
            initialized = count
        }
    }

    /// Makes room for `extra` more bytes.
    @inline(__always)
    mutating func reserve(_ extra: Int) {
        if _slowPath(extra > capacity &- count) { grow(extra) }
    }

    @inline(never)
    private mutating func grow(_ extra: Int) {
        let newCapacity = max(capacity * 2, count + extra)
        let newBase = UnsafeMutablePointer<UInt8>.allocate(capacity: newCapacity)
        newBase.initialize(from: base, count: count)
        base.deallocate()
        base = newBase
        capacity = newCapacity
    }

    @inline(__always)
    mutating func byte(_ value: UInt8) {
        reserve(1)
        base[count] = value
        count &+= 1
    }

    /// Writes a byte into room already reserved.
    @inline(__always)
    mutating func reservedByte(_ value: UInt8) {
        base[count] = value
        count &+= 1
    }

    @inline(__always)
    mutating func bytes(_ source: UnsafePointer<UInt8>, count length: Int) {
        reserve(length)
        (base + count).update(from: source, count: length)
        count &+= length
    }

    @inline(__always)
    mutating func bytes(_ source: [UInt8]) {
        source.withUnsafeBufferPointer { buffer in
            if let start = buffer.baseAddress { bytes(start, count: buffer.count) }
        }
    }

    /// Writes ASCII text as is (keys and punctuation known to need no escaping).
    @inline(__always)
    mutating func raw(_ text: StaticString) {
        bytes(text.utf8Start, count: text.utf8CodeUnitCount)
    }

    // MARK: Numbers

    /// Writes `value` in decimal.
    @inline(__always)
    mutating func integer(_ value: Int64) {
        reserve(20)
        if value < 0 { reservedByte(UInt8(ascii: "-")) }
        reservedUnsigned(value.magnitude)
    }

    @inline(__always)
    mutating func unsigned(_ value: UInt64) {
        reserve(20)
        reservedUnsigned(value)
    }

    /// Writes the decimal digits of `value` (at most 20) into reserved room: in chunks of
    /// eight digits with 32-bit arithmetic, two digits per table lookup.
    @inline(__always)
    mutating func reservedUnsigned(_ value: UInt64) {
        if value < 100_000_000 {
            reservedSmall(UInt32(truncatingIfNeeded: value))
        } else if value < 10_000_000_000_000_000 {
            let high = value / 100_000_000
            reservedSmall(UInt32(truncatingIfNeeded: high))
            reservedEight(UInt32(truncatingIfNeeded: value &- high &* 100_000_000))
        } else {
            let high = value / 10_000_000_000_000_000
            let rest = value &- high &* 10_000_000_000_000_000
            let middle = rest / 100_000_000
            reservedSmall(UInt32(truncatingIfNeeded: high))
            reservedEight(UInt32(truncatingIfNeeded: middle))
            reservedEight(UInt32(truncatingIfNeeded: rest &- middle &* 100_000_000))
        }
    }

    /// Writes `value` (below 10^8) without leading zeros.
    @inline(__always)
    private mutating func reservedSmall(_ value: UInt32) {
        let length = value < 10_000 ? (value < 100 ? (value < 10 ? 1 : 2) : (value < 1_000 ? 3 : 4))
            : (value < 1_000_000 ? (value < 100_000 ? 5 : 6) : (value < 10_000_000 ? 7 : 8))
        var end = count &+ length
        count = end
        var rest = value
        let pairs = _digitPairs.utf8Start
        while rest >= 100 {
            let quotient = rest / 100
            let pair = Int(truncatingIfNeeded: rest &- quotient &* 100) &* 2
            end &-= 2
            base[end] = pairs[pair]
            base[end &+ 1] = pairs[pair &+ 1]
            rest = quotient
        }
        if rest >= 10 {
            let pair = Int(truncatingIfNeeded: rest) &* 2
            base[end &- 2] = pairs[pair]
            base[end &- 1] = pairs[pair &+ 1]
        } else {
            base[end &- 1] = UInt8(truncatingIfNeeded: rest) &+ 48
        }
    }

    /// Writes `value` (below 10^8) as exactly eight digits.
    @inline(__always)
    private mutating func reservedEight(_ value: UInt32) {
        let pairs = _digitPairs.utf8Start
        let high = value / 10_000, low = value &- high &* 10_000
        let a = Int(truncatingIfNeeded: high / 100), b = Int(truncatingIfNeeded: high % 100)
        let c = Int(truncatingIfNeeded: low / 100), d = Int(truncatingIfNeeded: low % 100)
        let out = base + count
        out[0] = pairs[a &* 2]; out[1] = pairs[a &* 2 &+ 1]
        out[2] = pairs[b &* 2]; out[3] = pairs[b &* 2 &+ 1]
        out[4] = pairs[c &* 2]; out[5] = pairs[c &* 2 &+ 1]
        out[6] = pairs[d &* 2]; out[7] = pairs[d &* 2 &+ 1]
        count &+= 8
    }

    /// Writes a finite real in its shortest round-trip form (Swift's `description`:
    /// `0.1`, `-0.0`, `1e-05`, `1.7976931348623157e+308`), which is valid JSON.
    mutating func real(_ value: Double) {
        precondition(value.isFinite, "JSON has no representation for \(value); reals on the wire must be finite")
        let text = value.description
        text.utf8.withContiguousStorageIfAvailable { buffer in
            bytes(buffer.baseAddress!, count: buffer.count)
        } ?? bytes(Array(text.utf8))
    }

    // MARK: Strings

    /// Writes `text` as a JSON string: `"` and `\` escaped, control characters as
    /// `\n`, `\t`, ... or `\u00XX`, everything else (UTF-8 included) as is.
    @inline(__always)
    mutating func string(_ text: String) {
        let done: Void? = text.utf8.withContiguousStorageIfAvailable { buffer in
            stringBytes(buffer)
        }
        if done == nil { Array(text.utf8).withUnsafeBufferPointer { stringBytes($0) } }
    }

    /// Writes UTF-8 bytes as a JSON string.
    @inline(__always)
    mutating func stringBytes(_ buffer: UnsafeBufferPointer<UInt8>) {
        let length = buffer.count
        guard let start = buffer.baseAddress, length > 0 else { raw("\"\""); return }
        reserve(length &+ 2)
        if _fastPath(!needsEscaping(start, length)) {
            reservedByte(UInt8(ascii: "\""))
            (base + count).update(from: start, count: length)
            count &+= length
            reservedByte(UInt8(ascii: "\""))
        } else {
            escapedString(start, length)
        }
    }

    @inline(never)
    private mutating func escapedString(_ start: UnsafePointer<UInt8>, _ length: Int) {
        reserve(JSONString.quotedCapacity(length))
        count &+= JSONString.writeQuoted(UnsafeBufferPointer(start: start, count: length), to: base + count)
    }

    // MARK: Base64

    /// Writes `data` as a JSON string of standard base64 with padding.
    mutating func base64(_ data: [UInt8]) {
        let length = data.count
        reserve((length + 2) / 3 * 4 + 2)
        reservedByte(UInt8(ascii: "\""))
        let alphabet = _base64Alphabet.utf8Start
        data.withUnsafeBufferPointer { input in
            var index = 0
            while index + 3 <= length {
                let chunk = UInt32(input[index]) << 16 | UInt32(input[index + 1]) << 8 | UInt32(input[index + 2])
                base[count] = alphabet[Int(chunk >> 18)]
                base[count + 1] = alphabet[Int(chunk >> 12 & 63)]
                base[count + 2] = alphabet[Int(chunk >> 6 & 63)]
                base[count + 3] = alphabet[Int(chunk & 63)]
                count += 4
                index += 3
            }
            if index < length {
                let second = index + 1 < length ? UInt32(input[index + 1]) : 0
                let chunk = UInt32(input[index]) << 16 | second << 8
                base[count] = alphabet[Int(chunk >> 18)]
                base[count + 1] = alphabet[Int(chunk >> 12 & 63)]
                base[count + 2] = index + 1 < length ? alphabet[Int(chunk >> 6 & 63)] : UInt8(ascii: "=")
                base[count + 3] = UInt8(ascii: "=")
                count += 4
            }
        }
        reservedByte(UInt8(ascii: "\""))
    }
}

/// The number of decimal digits of `value` (1...20).
@inline(__always)
func decimalLength(_ value: UInt64) -> Int {
    var length = 1
    var threshold: UInt64 = 10
    while value >= threshold {
        length &+= 1
        if length == 20 { break }
        threshold &*= 10
    }
    return length
}

/// Whether any of `length` bytes at `start` needs escaping in a JSON string (`"`, `\`, or a
/// control character), eight bytes at a time.
@inline(__always)
func needsEscaping(_ start: UnsafePointer<UInt8>, _ length: Int) -> Bool {
    var index = 0
    let raw = UnsafeRawPointer(start)
    while index &+ 8 <= length {
        if _swarSpecial(raw.loadUnaligned(fromByteOffset: index, as: UInt64.self), highBit: false) { return true }
        index &+= 8
    }
    while index < length {
        let byte = start[index]
        if byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { return true }
        index &+= 1
    }
    return false
}

/// Whether a word of eight bytes holds a `"`, a `\`, a byte below 0x20 or (with
/// `highBit`) a byte of 0x80 or more. Exact as a yes/no answer.
@inline(__always)
func _swarSpecial(_ word: UInt64, highBit: Bool) -> Bool {
    let ones: UInt64 = 0x0101_0101_0101_0101
    let highs: UInt64 = 0x8080_8080_8080_8080
    let quote = word ^ (ones &* 0x22)
    let backslash = word ^ (ones &* 0x5C)
    var found = (quote &- ones) & ~quote
    found |= (backslash &- ones) & ~backslash
    found |= (word &- ones &* 0x20) & ~word
    if highBit { return (found | word) & highs != 0 }
    return found & highs != 0
}

let _digitPairs: StaticString =
    "00010203040506070809101112131415161718192021222324252627282930313233343536373839404142434445464748495051525354555657585960616263646566676869707172737475767778798081828384858687888990919293949596979899"
let _base64Alphabet: StaticString = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
