/// Reads the `Accept-Encoding` and `Content-Encoding` headers (RFC 9110 §12.5.3, §8.4), as
/// far as gzip is concerned.
enum ContentCoding {
    /// Whether a response may be gzip'd: `gzip` (or `x-gzip`) is listed with a weight above
    /// zero, or `*` is and gzip is not refused by name. `gzip;q=0` refuses it.
    static func acceptsGzip(_ header: String?) -> Bool {
        guard let header else { return false }
        var named: Bool?
        var wildcard: Bool?
        for element in header.split(separator: ",") {
            let parts = element.split(separator: ";")
            guard let token = parts.first.map(trimmed)?.lowercased(), !token.isEmpty else { continue }
            let acceptable = weight(parts.dropFirst()) > 0
            switch token {
            case "gzip", "x-gzip": named = acceptable
            case "*": wildcard = acceptable
            default: continue
            }
        }
        return named ?? wildcard ?? false
    }

    /// The request body's coding: `nil` for none or `identity`, `"gzip"`, or the name of
    /// one this server does not take (several codings stacked are not taken either).
    static func requestCoding(_ header: String?) -> String? {
        guard let header else { return nil }
        let value = trimmed(Substring(header)).lowercased()
        switch value {
        case "", "identity": return nil
        case "gzip", "x-gzip": return "gzip"
        default: return value
        }
    }

    /// The `q` parameter among `parameters` (1 when absent or unreadable).
    private static func weight(_ parameters: ArraySlice<Substring>) -> Double {
        for parameter in parameters {
            let pair = parameter.split(separator: "=", maxSplits: 1)
            guard pair.count == 2, trimmed(pair[0]).lowercased() == "q" else { continue }
            return Double(trimmed(pair[1])) ?? 1
        }
        return 1
    }

    private static func trimmed(_ text: Substring) -> String {
        String(text.drop { $0 == " " || $0 == "\t" }.reversed().drop { $0 == " " || $0 == "\t" }.reversed())
    }
}
