import FieldMergeProtocol
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

extension HTTPTransport {
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
