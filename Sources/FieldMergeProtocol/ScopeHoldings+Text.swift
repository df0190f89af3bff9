/// Holdings as the device's store keeps them beside its revision (Specs/store.md, "Leaving
/// a scope"): one line of text, since the store knows nothing of the protocol.
///
/// Scopes by name, `;` between them; each `name=*` (every root) or `name=` and its root ids
/// in ascending order, `,` between them: `archive=;everything=*;project=3,42`. Bytes of a
/// name outside `A-Z a-z 0-9 _ - .` are written `%XX`, so the text is unambiguous whatever
/// a server names its scopes. Equal holdings give equal text; empty holdings are the empty
/// text (and no holdings, a server without scopes, no text at all).
extension ScopeHoldings {
    /// The holdings as text (see above).
    package var storedText: String {
        var text = ""
        for (position, name) in scopes.keys.sorted().enumerated() {
            if position > 0 { text += ";" }
            text += Self.escape(name) + "="
            switch scopes[name]! {
            case .all: text += "*"
            case .some(let ids): text += ids.map(String.init).joined(separator: ",")
            }
        }
        return text
    }

    /// The holdings `text` (``storedText``) stands for; nil when it is not such a text.
    package init?(storedText text: String) {
        var holdings: [String: RootSet] = [:]
        for entry in text.split(separator: ";", omittingEmptySubsequences: false) where !text.isEmpty {
            guard let equals = entry.firstIndex(of: "="), let name = Self.unescape(entry[..<equals]), !name.isEmpty,
                holdings[name] == nil
            else { return nil }
            let roots = entry[entry.index(after: equals)...]
            if roots == "*" {
                holdings[name] = .all
            } else if roots.isEmpty {
                holdings[name] = RootSet.none
            } else {
                var ids: [Int64] = []
                for part in roots.split(separator: ",", omittingEmptySubsequences: false) {
                    guard let id = Int64(part), ids.last.map({ $0 < id }) ?? true else { return nil }
                    ids.append(id)
                }
                holdings[name] = .some(ids)
            }
        }
        self.init(holdings)
    }

    private static func isPlain(_ byte: UInt8) -> Bool {
        switch byte {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
            UInt8(ascii: "_"), UInt8(ascii: "-"), UInt8(ascii: "."):
            true
        default: false
        }
    }

    private static let hexDigits = Array("0123456789ABCDEF".utf8)

    private static func escape(_ name: String) -> String {
        var bytes: [UInt8] = []
        for byte in name.utf8 {
            if isPlain(byte) {
                bytes.append(byte)
            } else {
                bytes += [UInt8(ascii: "%"), hexDigits[Int(byte >> 4)], hexDigits[Int(byte & 0xF)]]
            }
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func unescape(_ text: Substring) -> String? {
        var bytes: [UInt8] = []
        var iterator = text.utf8.makeIterator()
        while let byte = iterator.next() {
            if byte == UInt8(ascii: "%") {
                guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else { return nil }
                bytes.append(high << 4 | low)
            } else {
                guard isPlain(byte) else { return nil }
                bytes.append(byte)
            }
        }
        return String(validating: bytes, as: UTF8.self)
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        hexDigits.firstIndex(of: byte).map(UInt8.init)
    }
}
