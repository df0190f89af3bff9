// Every URLSession request leaks about 50 bytes on Linux: swift-corelibs-foundation's
// CFURLSessionCurlHostIsEqual (called by _EasyHandle.set(url:) for each transfer) parses
// the URL with curl_url() and frees the handle with curl_free() instead of
// curl_url_cleanup(), so the parts libcurl stored in it (scheme, host, port, path) are
// never freed. The server need not answer: the URL is set before connecting.
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

let requests = Int(CommandLine.arguments.dropFirst().first ?? "3") ?? 3
let session = URLSession(configuration: .ephemeral)
for _ in 0..<requests {
    let done = DispatchSemaphore(value: 0)
    // Port 1 on the loopback: refused at once.
    session.dataTask(with: URL(string: "http://127.0.0.1:1/sync")!) { _, _, _ in done.signal() }.resume()
    done.wait()
}
session.finishTasksAndInvalidate()
