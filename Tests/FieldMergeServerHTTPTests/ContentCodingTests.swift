@testable import FieldMergeServerHTTP
import Testing

@Suite struct ContentCodingTests {
    @Test(arguments: [
        ("gzip", true), ("GZIP", true), (" gzip ", true), ("gzip;q=1.0", true), ("br, gzip;q=0.1", true),
        ("x-gzip", true), ("*", true), ("*;q=0.5", true),
        ("gzip;q=0", false), ("gzip; q=0.000", false), ("*;q=0", false), ("*, gzip;q=0", false),
        ("deflate", false), ("br, identity", false), ("", false), ("gzipx", false),
    ] as [(String, Bool)])
    func acceptEncoding(_ header: String, _ accepts: Bool) {
        #expect(ContentCoding.acceptsGzip(header) == accepts)
    }

    @Test func absentAcceptEncoding_meansNoGzip() {
        #expect(!ContentCoding.acceptsGzip(nil))
    }

    @Test func requestCoding() {
        #expect(ContentCoding.requestCoding(nil) == nil)
        #expect(ContentCoding.requestCoding("identity") == nil)
        #expect(ContentCoding.requestCoding("Gzip") == "gzip")
        #expect(ContentCoding.requestCoding("x-gzip") == "gzip")
        #expect(ContentCoding.requestCoding("br") == "br")
        #expect(ContentCoding.requestCoding("gzip, br") == "gzip, br")
    }
}
