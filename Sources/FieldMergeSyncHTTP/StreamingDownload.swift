import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// What takes a response of ``StreamingDownload`` as it arrives, on URLSession's delegate
/// queue, one call at a time and in order: its head, then each chunk of its body.
protocol ResponseSink: AnyObject, Sendable {
    /// The response's head. False ends the exchange (and closes its connection).
    func head(status: Int, contentType: String?) -> Bool
    /// A chunk of the body. False ends the exchange (and closes its connection).
    func body(_ data: Data) -> Bool
}

/// Hands a response to ``HTTPLiveChannel`` as it arrives: its head, then each chunk of its
/// body the moment URLSession has it (`URLSession.bytes` is not in FoundationNetworking on
/// Linux, and a completion handler would wait for the whole body, which an event stream
/// never has).
///
/// The sink reads each chunk where URLSession delivers it, on the session's delegate queue:
/// a live event costs no hop to another thread before it is parsed (with 1,000 devices in
/// one process, each hop is felt; Specs/benchmarks.md, "live").
final class StreamingDownload: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    // @unchecked: the only state is behind the lock.
    private struct Exchange {
        let sink: any ResponseSink
        let ended: AsyncThrowingStream<Void, any Error>.Continuation
    }

    private let lock = NSLock()
    private var exchanges: [Int: Exchange] = [:]

    /// Starts `request` on `session` (whose delegate this is), feeding `sink`. The returned
    /// stream yields nothing and finishes when the exchange ends: throwing URLSession's error
    /// when it failed, without one when it completed or the sink ended it. Ending the
    /// stream's iteration, or cancelling the returned task, stops the exchange and closes its
    /// connection.
    func start(_ request: URLRequest, on session: URLSession, into sink: any ResponseSink) -> (URLSessionDataTask, AsyncThrowingStream<Void, any Error>) {
        let task = session.dataTask(with: request)
        let (ended, continuation) = AsyncThrowingStream.makeStream(of: Void.self)
        let identifier = task.taskIdentifier
        continuation.onTermination = { [weak self] _ in
            self?.remove(identifier)
            task.cancel()  // nothing when it completed
        }
        lock.withLock { exchanges[identifier] = Exchange(sink: sink, ended: continuation) }
        task.resume()
        return (task, ended)
    }

    @discardableResult
    private func remove(_ identifier: Int) -> Exchange? {
        lock.withLock { exchanges.removeValue(forKey: identifier) }
    }

    private func exchange(_ task: URLSessionTask) -> Exchange? {
        lock.withLock { exchanges[task.taskIdentifier] }
    }

    /// Ends the exchange of `task` because its sink said so.
    private func stop(_ task: URLSessionTask) {
        remove(task.taskIdentifier)?.ended.finish()
        task.cancel()
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping (URLSession.ResponseDisposition) -> Void
    ) {
        let http = response as? HTTPURLResponse
        if let exchange = exchange(dataTask),
            !exchange.sink.head(status: http?.statusCode ?? 0, contentType: http?.value(forHTTPHeaderField: "Content-Type"))
        {
            stop(dataTask)
            completionHandler(.cancel)
            return
        }
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        if let exchange = exchange(dataTask), !exchange.sink.body(data) { stop(dataTask) }
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        remove(task.taskIdentifier)?.ended.finish(throwing: error)
    }
}
