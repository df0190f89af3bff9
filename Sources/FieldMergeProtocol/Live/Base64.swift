/// Standard base64 (RFC 4648 §4, with padding), for a gzip'd page inside a text event
/// (``LiveEvent/compressedChanges(after:revision:body:)``). No Foundation.
public enum Base64 {
    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    /// Each byte's value in the alphabet, 0xFF where it is none.
    private static let values: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (index, byte) in alphabet.enumerated() { table[Int(byte)] = UInt8(index) }
        return table
    }()

    /// `bytes` as base64 text (ASCII bytes).
    public static func encode(_ bytes: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count + 2) / 3 * 4)
        var index = 0
        while index + 3 <= bytes.count {
            let group = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
            out += [alphabet[Int(group >> 18)], alphabet[Int(group >> 12 & 63)], alphabet[Int(group >> 6 & 63)], alphabet[Int(group & 63)]]
            index += 3
        }
        let rest = bytes.count - index
        if rest > 0 {
            let group = UInt32(bytes[index]) << 16 | (rest == 2 ? UInt32(bytes[index + 1]) << 8 : 0)
            out += [alphabet[Int(group >> 18)], alphabet[Int(group >> 12 & 63)]]
            out += rest == 2 ? [alphabet[Int(group >> 6 & 63)], UInt8(ascii: "=")] : [UInt8(ascii: "="), UInt8(ascii: "=")]
        }
        return out
    }

    /// The bytes `text` encodes; nil unless it is whole groups of four from the alphabet, with
    /// padding only at its end (no line breaks, no spaces).
    public static func decode(_ text: ArraySlice<UInt8>) -> [UInt8]? {
        guard text.count % 4 == 0 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(text.count / 4 * 3)
        var index = text.startIndex
        while index < text.endIndex {
            let last = index + 4 == text.endIndex
            let padding = last ? (text[index + 3] == UInt8(ascii: "=") ? (text[index + 2] == UInt8(ascii: "=") ? 2 : 1) : 0) : 0
            var group: UInt32 = 0
            for offset in 0..<(4 - padding) {
                let value = values[Int(text[index + offset])]
                guard value != 0xFF else { return nil }
                group |= UInt32(value) << (18 - 6 * offset)
            }
            out.append(UInt8(group >> 16))
            if padding < 2 { out.append(UInt8(group >> 8 & 0xFF)) }
            if padding < 1 { out.append(UInt8(group & 0xFF)) }
            index += 4
        }
        return out
    }
}
