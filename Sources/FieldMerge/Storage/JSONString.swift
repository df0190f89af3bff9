/// Writing a JSON string: the one escaper of the wire writer, JSON documents and text sets
/// stored as JSON. `"` and `\` are escaped, control characters as `\n`, `\t`, ... or
/// `\u00XX`; everything else (UTF-8 included) is copied as it is.
package enum JSONString {
    /// Whether any of `bytes` needs escaping: `"`, `\` or a control character.
    @inlinable
    package static func needsEscaping(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        for byte in bytes where byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { return true }
        return false
    }

    /// The most bytes ``writeQuoted(_:to:shortEscapes:)`` writes for `count` bytes.
    @inlinable
    package static func quotedCapacity(_ count: Int) -> Int { count &* 6 &+ 2 }

    /// Writes `"`, `source` escaped and `"` at `out`, which has room for
    /// ``quotedCapacity(_:)`` bytes; returns how many it wrote.
    ///
    /// With `shortEscapes` (JSON's usual form), `\n`, `\r`, `\t`, `\b` and `\f` stand for their
    /// control characters; without, every control character is `\u00XX`.
    package static func writeQuoted(
        _ source: UnsafeBufferPointer<UInt8>, to out: UnsafeMutablePointer<UInt8>, shortEscapes: Bool = true
    ) -> Int {
        let hex: StaticString = "0123456789abcdef"
        let digits = hex.utf8Start
        var count = 0
        @inline(__always) func put(_ byte: UInt8) {
            out[count] = byte
            count &+= 1
        }
        put(UInt8(ascii: "\""))
        for byte in source {
            switch byte {
            case UInt8(ascii: "\""), UInt8(ascii: "\\"): put(UInt8(ascii: "\\")); put(byte)
            case 0x0A where shortEscapes: put(UInt8(ascii: "\\")); put(UInt8(ascii: "n"))
            case 0x0D where shortEscapes: put(UInt8(ascii: "\\")); put(UInt8(ascii: "r"))
            case 0x09 where shortEscapes: put(UInt8(ascii: "\\")); put(UInt8(ascii: "t"))
            case 0x08 where shortEscapes: put(UInt8(ascii: "\\")); put(UInt8(ascii: "b"))
            case 0x0C where shortEscapes: put(UInt8(ascii: "\\")); put(UInt8(ascii: "f"))
            case 0..<0x20:
                put(UInt8(ascii: "\\")); put(UInt8(ascii: "u")); put(UInt8(ascii: "0")); put(UInt8(ascii: "0"))
                put(digits[Int(byte >> 4)]); put(digits[Int(byte & 15)])
            default: put(byte)
            }
        }
        put(UInt8(ascii: "\""))
        return count
    }

    /// Appends `string` to `bytes` as a JSON string (see ``writeQuoted(_:to:shortEscapes:)``):
    /// copied at once when nothing in it needs escaping.
    package static func append(_ string: String, to bytes: inout [UInt8], shortEscapes: Bool = true) {
        var string = string
        string.withUTF8 { utf8 in
            guard needsEscaping(utf8) else {
                bytes.reserveCapacity(bytes.count + utf8.count + 2)
                bytes.append(UInt8(ascii: "\""))
                bytes.append(contentsOf: utf8)
                bytes.append(UInt8(ascii: "\""))
                return
            }
            let start = bytes.count, room = quotedCapacity(utf8.count)
            bytes.append(contentsOf: repeatElement(0, count: room))
            let written = bytes.withUnsafeMutableBufferPointer { buffer in
                writeQuoted(utf8, to: buffer.baseAddress! + start, shortEscapes: shortEscapes)
            }
            bytes.removeLast(room - written)
        }
    }
}
