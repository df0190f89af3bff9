import FieldMergeProtocol
import Synchronization

/// Requests to several server processes serving one data set, each request to the next one
/// in turn (`simulate --server A --server B`): a device's next request, or its retry after
/// a lost answer, usually reaches another process than the one before.
final class AlternatingTransport: SyncTransport {
    private let transports: [any SyncTransport]
    private let next = Mutex(0)

    /// - Precondition: `transports` is not empty.
    init(_ transports: [any SyncTransport]) {
        precondition(!transports.isEmpty, "an alternating transport needs at least one transport")
        self.transports = transports
    }

    func send(_ body: [UInt8], gzip: Bool) async throws -> [UInt8] {
        let index = next.withLock { index in
            defer { index = (index + 1) % transports.count }
            return index
        }
        return try await transports[index].send(body, gzip: gzip)
    }
}
