import FieldMerge
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
import FieldMergeFiles
#endif

/// Writes response bodies of ``HTTPTransport``'s attachment downloads into files as they
/// arrive: memory holds one chunk at a time, whatever the attachment's size. The body of
/// an error status (which is not the attachment) is kept instead, up to 64 KiB, for its
/// `{"error", "message"}`.
final class FileDownload: NSObject, URLSessionDataDelegate, @unchecked Sendable {
    // @unchecked: the only state is behind the lock.
    struct Outcome {
        var status: Int
        var errorBody: [UInt8]
    }

    private struct Exchange {
        var descriptor: Int32
        var path: String
        var status = 0
        var written: Int64 = 0
        var errorBody: [UInt8] = []
        var failure: AttachmentFileError?
        var progress: (@Sendable (Int64) -> Void)?
        var received: (@Sendable (UnsafeRawBufferPointer) -> Void)?
        var continuation: CheckedContinuation<Outcome, any Error>
    }

    private let lock = NSLock()
    private var exchanges: [Int: Exchange] = [:]

    /// Runs `request` on `session` (whose delegate this is), appending a successful body to
    /// the file `descriptor` refers to (`path` for messages), each piece then handed to
    /// `received` (in order: the session's delegate queue is serial).
    func run(
        _ request: URLRequest, on session: URLSession, into descriptor: Int32, path: String, progress: (@Sendable (Int64) -> Void)?,
        received: (@Sendable (UnsafeRawBufferPointer) -> Void)? = nil
    ) async throws -> Outcome {
        let task = session.dataTask(with: request)
        return try await task.run(registering: { continuation in
            lock.withLock {
                exchanges[task.taskIdentifier] = Exchange(
                    descriptor: descriptor, path: path, progress: progress, received: received, continuation: continuation)
            }
        })
    }

    func urlSession(
        _ session: URLSession, dataTask: URLSessionDataTask, didReceive response: URLResponse,
        completionHandler: @escaping (URLSession.ResponseDisposition) -> Void
    ) {
        lock.withLock { exchanges[dataTask.taskIdentifier]?.status = (response as? HTTPURLResponse)?.statusCode ?? 0 }
        completionHandler(.allow)
    }

    func urlSession(_ session: URLSession, dataTask: URLSessionDataTask, didReceive data: Data) {
        typealias Written = (cancel: Bool, progress: (@Sendable (Int64) -> Void)?, received: (@Sendable (UnsafeRawBufferPointer) -> Void)?, total: Int64)
        let (cancel, progress, received, written): Written = lock.withLock {
            guard let index = exchanges.index(forKey: dataTask.taskIdentifier) else { return (false, nil, nil, 0) }
            let exchange = exchanges.values[index]
            guard (200..<300).contains(exchange.status) else {
                if exchange.errorBody.count < 1 << 16 { exchanges.values[index].errorBody.append(contentsOf: data) }
                return (false, nil, nil, 0)
            }
            let failure: AttachmentFileError? = data.withUnsafeBytes { buffer in
                do throws(AttachmentFileError) {
                    try AttachmentFiles.write(exchange.descriptor, path: exchange.path, buffer)
                    return nil
                } catch {
                    return error
                }
            }
            if let failure {
                exchanges.values[index].failure = failure
                return (true, nil, nil, 0)
            }
            exchanges.values[index].written += Int64(data.count)
            return (false, exchange.progress, exchange.received, exchanges.values[index].written)
        }
        if cancel { dataTask.cancel() }
        if let received { data.withUnsafeBytes { received($0) } }
        progress?(written)
    }

    func urlSession(_ session: URLSession, task: URLSessionTask, didCompleteWithError error: (any Error)?) {
        guard let exchange = lock.withLock({ exchanges.removeValue(forKey: task.taskIdentifier) }) else { return }
        if let failure = exchange.failure {
            exchange.continuation.resume(throwing: failure)
        } else if let error {
            exchange.continuation.resume(throwing: error)
        } else {
            exchange.continuation.resume(returning: Outcome(status: exchange.status, errorBody: exchange.errorBody))
        }
    }
}
