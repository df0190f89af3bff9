@testable import FieldMergeSyncHTTP
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing

/// The size a body will have as `HTTPTransport` receives it, which sizes its buffer once
/// (Specs/http.md §5): only ever a hint, read from the server's `FieldMerge-Inflated-Length`
/// or an unencoded body's `Content-Length`.
struct BoundedDownloadTests {
    static func response(_ headers: [String: String]) -> URLResponse {
        HTTPURLResponse(url: URL(string: "http://127.0.0.1/sync")!, statusCode: 200, httpVersion: "HTTP/1.1", headerFields: headers)!
    }

    @Test(arguments: [
        (["Content-Encoding": "gzip", "FieldMerge-Inflated-Length": "2834113", "Content-Length": "237000"], 2_834_113),
        (["Content-Encoding": "gzip", "Content-Length": "237000"], nil),  // the wire's length is not the body's
        (["Content-Length": "5120"], 5_120),
        (["Content-Encoding": "identity", "Content-Length": "5120"], 5_120),
        (["Content-Encoding": "gzip", "FieldMerge-Inflated-Length": "-5"], nil),
        (["Content-Encoding": "gzip", "FieldMerge-Inflated-Length": "lots"], nil),
        (["Content-Encoding": "gzip", "FieldMerge-Inflated-Length": "99999999999999999999999"], nil),
        ([:], nil),
    ] as [([String: String], Int?)])
    func expectedLength(_ headers: [String: String], _ expected: Int?) {
        #expect(BoundedDownload.expectedLength(of: Self.response(headers)) == expected)
    }

    @Test func aResponseThatIsNotHTTP_hasNoExpectedLength() {
        let response = URLResponse(url: URL(string: "file:///tmp/x")!, mimeType: nil, expectedContentLength: 10, textEncodingName: nil)
        #expect(BoundedDownload.expectedLength(of: response) == nil)
    }
}
