/// The id of one HTTP request, in its log line and its `X-Request-ID` response header: the
/// request's own `X-Request-ID` when it is sane, else one made here.
enum RequestID {
    /// The longest incoming id kept.
    static let maxLength = 128

    /// `header` when it is 1 to ``maxLength`` characters of `A-Z a-z 0-9 - _ . : + / =`
    /// (what proxies and tracing systems send: UUIDs, hex, base64); else a new id.
    static func take(_ header: String?) -> String {
        if let header, isSane(header) { return header }
        return make()
    }

    static func isSane(_ id: String) -> Bool {
        let utf8 = id.utf8
        guard !utf8.isEmpty, utf8.count <= maxLength else { return false }
        return utf8.allSatisfy { byte in
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"): true
            case UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: ":"), UInt8(ascii: "+"), UInt8(ascii: "/"),
                UInt8(ascii: "="): true
            default: false
            }
        }
    }

    /// 16 random hexadecimal digits.
    static func make() -> String {
        let hex = String(UInt64.random(in: 0...UInt64.max), radix: 16)
        return String(repeating: "0", count: 16 - hex.count) + hex
    }
}
