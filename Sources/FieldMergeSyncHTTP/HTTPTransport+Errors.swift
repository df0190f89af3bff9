import FieldMerge
import FieldMergeProtocol
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension HTTPTransport {
    /// The `{"error": …, "message": …}` of an error response, if it is one (gzip'd or not).
    static func detail(_ body: [UInt8]) -> WireErrorBody? {
        guard !body.isEmpty, let schema = try? Schema([]) else { return nil }
        guard let json = try? Gzip.decompressIfGzip(body, limit: 1 << 20) else { return nil }
        return try? WireCodec(schema: schema).decodeError(json)
    }

    /// A short account of a URLSession failure: what happened, and where.
    static func describe(_ error: any Error) -> String {
        guard let urlError = error as? URLError else { return "\(error)" }
        let what: String
        switch urlError.code {
        case .timedOut: what = "timed out"
        case .cannotConnectToHost: what = "cannot connect"
        case .networkConnectionLost: what = "connection lost"
        case .cannotFindHost, .dnsLookupFailed: what = "cannot resolve the host"
        case .notConnectedToInternet: what = "not connected"
        default: what = "URL error \(urlError.code.rawValue)"
        }
        let url = urlError.failingURL.map { " (\($0.absoluteString))" } ?? ""
        return what + url
    }
}
