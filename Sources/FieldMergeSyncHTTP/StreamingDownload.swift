import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// Hands a response to ``HTTPLiveChannel`` as it arrives: its head, then each chunk of its
/// body the moment URLSession has it (`URLSession.bytes` is not in FoundationNetworking on
/// Linux, and a completion handler would wait for the whole body, which an event stream
/// never has).
final class StreamingDownload: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    /// What arrived: the head, then body chunks; the stream finishes with the exchange
    /// (throwing URLSession's error when it failed).
    enum Part: Sendable {
        case head(status: Int, contentType: String?)
        case bytes(Data)
    }

    private let lock = NSLock()
    private var exchanges: [Int: AsyncThrowingStream<Part, any Error>.Continuation] = [:]

    /// Starts `request` on `session` (whose delegate this is). Ending the returned stream's
    /// iteration, or cancelling the returned task, stops the exchange and closes its
    /// connection.
    func start(_ request: URLRequest, on session: URLSession) -> (URLSessionDataTask, AsyncThrowingStream<Part, any Error>) {
        let task = session.dataTask(with: request)
        let (parts, continuation) = AsyncThrowingStream.makeStream(of: Part.self)
        let identifier = task.taskIdentifier
        continuation.onTermination = { [weak self] _ in
            self?.remove(identifier)
            task.cancel()  // nothing when it completed
        }
        lock.withLock { exchanges[identifier] = continuation }
        task.resume()
        return (task, parts)
    }

    private func remove(_ identifier: Int) {
        _ = lock.withLock { exchanges.removeValue(forKey: identifier) }
    }

    private func continuation(_ task: URLSessionTask) -> AsyncThrowingStream<Part, any Error>.Continuation? {
        lock.withLock { exchanges[task.taskIdentifier] }
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping (URLSession.ResponseDisposition) -> Void
    ) {
        let http = response as? HTTPURLResponse
        continuation(dataTask)?.yield(.head(status: http?.statusCode ?? 0, contentType: http?.value(forHTTPHeaderField: "Content-Type")))
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        continuation(dataTask)?.yield(.bytes(data))
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        guard let continuation = lock.withLock({ exchanges.removeValue(forKey: task.taskIdentifier) }) else { return }
        continuation.finish(throwing: error)
    }
}
