import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Collects response bodies for ``HTTPTransport``, cancelling an exchange as soon as its
/// body passes the transport's limit: URLSession inflates `Content-Encoding: gzip` as the
/// bytes arrive, so without this a small gzip'd answer could fill memory before any size
/// check. Memory per exchange stays within the limit plus one chunk.
final class BoundedDownload: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    /// The body passed `limit` bytes after `received` had arrived.
    struct TooLarge: Error {
        var received: Int
        var limit: Int
        var status: Int
    }

    private struct Exchange {
        /// The body so far, as the bytes the transport returns (no copy at the end).
        var data: [UInt8] = []
        var limit: Int
        var response: URLResponse?
        /// Bytes that arrived; past the limit, the body is dropped and only this is kept.
        var received = 0
        var tooLarge = false
        var continuation: CheckedContinuation<([UInt8], URLResponse), any Error>

        /// Appends a chunk, or drops the body once it passes the limit; true when it did.
        mutating func take(_ chunk: Data) -> Bool {
            guard !tooLarge else { return false }
            received += chunk.count
            if received > limit {
                tooLarge = true
                data = []
            } else {
                data.append(contentsOf: chunk)
            }
            return tooLarge
        }
    }

    private let lock = NSLock()
    private var exchanges: [Int: Exchange] = [:]

    /// Runs `request` on `session` (whose delegate is this object) and returns its body,
    /// or throws ``TooLarge`` once the body passes `limit` bytes.
    func data(for request: URLRequest, on session: URLSession, limit: Int) async throws -> ([UInt8], URLResponse) {
        let task = session.dataTask(with: request)
        return try await task.run(registering: { continuation in
            lock.withLock { exchanges[task.taskIdentifier] = Exchange(limit: limit, continuation: continuation) }
        })
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping (URLSession.ResponseDisposition) -> Void
    ) {
        let length = Self.expectedLength(of: response)
        lock.withLock {
            guard let index = exchanges.index(forKey: dataTask.taskIdentifier) else { return }
            exchanges.values[index].response = response
            // The body's buffer sized once: grown by doubling, a page of a few megabytes
            // held up to twice its size, and three times while it grew. At most 64 MiB
            // before the bytes arrive, whatever a server claims.
            if let length, length <= exchanges.values[index].limit {
                exchanges.values[index].data.reserveCapacity(min(length, Self.largestReservation))
            }
        }
        completionHandler(.allow)
    }

    /// The most memory reserved for a body on its headers' word.
    static let largestReservation = 64 << 20

    /// How long the body will be as the transport receives it: the server's
    /// `FieldMerge-Inflated-Length` for a gzip'd answer (URLSession inflates it), the
    /// `Content-Length` of one that is not encoded; nil when neither says. Only a hint: the
    /// body is collected and checked against the limit as it arrives, whatever it says.
    static func expectedLength(of response: URLResponse) -> Int? {
        guard let http = response as? HTTPURLResponse else { return nil }
        if let inflated = http.value(forHTTPHeaderField: "FieldMerge-Inflated-Length") {
            return Int(inflated).flatMap { $0 >= 0 ? $0 : nil }
        }
        let encoding = http.value(forHTTPHeaderField: "Content-Encoding") ?? ""
        guard encoding.isEmpty || encoding.lowercased() == "identity", http.expectedContentLength > 0 else { return nil }
        return Int(http.expectedContentLength)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        // Mutated in place in the dictionary: a copy taken out and stored back would share
        // the body's buffer, so every chunk appended would copy the whole body so far
        // (quadratic time, and two bodies in memory at each chunk).
        let cancel: Bool = lock.withLock {
            guard let index = exchanges.index(forKey: dataTask.taskIdentifier) else { return false }
            return exchanges.values[index].take(data)
        }
        if cancel { dataTask.cancel() }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        guard let exchange = lock.withLock({ exchanges.removeValue(forKey: task.taskIdentifier) }) else { return }
        if exchange.tooLarge {
            let status = (exchange.response as? HTTPURLResponse)?.statusCode ?? 0
            exchange.continuation.resume(throwing: TooLarge(received: exchange.received, limit: exchange.limit, status: status))
        } else if let error {
            exchange.continuation.resume(throwing: error)
        } else if let response = exchange.response {
            exchange.continuation.resume(returning: (exchange.data, response))
        } else {
            exchange.continuation.resume(throwing: URLError(.badServerResponse))
        }
    }
}

extension URLSessionDataTask {
    /// Resumes the task once `register` has kept the continuation its delegate resumes at
    /// the end of the exchange; cancelling the caller cancels the task.
    func run<T>(registering register: (CheckedContinuation<T, any Error>) -> Void) async throws -> T {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                register(continuation)
                resume()
            }
        } onCancel: {
            cancel()
        }
    }
}
