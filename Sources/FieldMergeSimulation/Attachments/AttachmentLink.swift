import FieldMerge
import FieldMergeProtocol
import FieldMergeServer
import FieldMergeWorkload
import Foundation
import Synchronization

/// The server of an attachment run as the devices reach it: an ``InProcessTransport``
/// replaced when the server restarts (between rounds, while no request runs).
final class AttachmentServerSlot: Sendable {
    private let current: Mutex<InProcessTransport?> = Mutex(nil)

    var transport: InProcessTransport {
        get throws {
            guard let transport = current.withLock({ $0 }) else { throw TransportError("the server is restarting (simulated)") }
            return transport
        }
    }

    func set(_ transport: InProcessTransport?) { current.withLock { $0 = transport } }
}

/// What the links saw cross the wire, for the oracle: the bytes each hash received, what
/// garbage collection removed of each, and the faults injected.
final class AttachmentLedger: Sendable {
    struct State {
        var received: [String: Int64] = [:]
        var removed: [String: Int64] = [:]
        var downloaded: Int64 = 0
        var uploadsCut = 0, downloadsCut = 0, busy = 0
    }

    private let state = Mutex(State())

    var snapshot: State { state.withLock { $0 } }

    func received(_ sha256: String, _ bytes: Int64) { state.withLock { $0.received[sha256, default: 0] += bytes } }
    func removed(_ sha256: String, _ bytes: Int64) { state.withLock { $0.removed[sha256, default: 0] += bytes } }
    func downloaded(_ bytes: Int64) { state.withLock { $0.downloaded += bytes } }
    func uploadCut() { state.withLock { $0.uploadsCut += 1 } }
    func downloadCut() { state.withLock { $0.downloadsCut += 1 } }
    func busyRefusal() { state.withLock { $0.busy += 1 } }
}

/// One device's connection to the server of an attachment run. Records travel untouched;
/// uploads and downloads of attachment bytes are cut off part way at the run's rate (the
/// server keeps the bytes that arrived, the device the bytes it received), and every byte
/// the server accepts is counted per hash in the ledger.
final class AttachmentLink: SyncTransport, AttachmentTransport {
    private let slot: AttachmentServerSlot
    private let ledger: AttachmentLedger
    private let scratch: String
    private let random: Mutex<SplitMix64>
    private let rate: Mutex<Double>

    init(slot: AttachmentServerSlot, ledger: AttachmentLedger, scratch: String, seed: UInt64, interruptRate: Double) {
        self.slot = slot
        self.ledger = ledger
        self.scratch = scratch
        random = Mutex(SplitMix64(seed: seed))
        rate = Mutex(interruptRate)
    }

    /// Sets the share of transfers cut off (0 while the run settles).
    func setInterruptRate(_ value: Double) { rate.withLock { $0 = value } }

    /// Where a transfer of `length` bytes is cut (a point strictly inside it), or nil.
    private func cut(_ length: Int64) -> Int64? {
        random.withLock { random in
            let rate = self.rate.withLock { $0 }
            guard length >= 2, rate > 0, Double(random.next() >> 11) / Double(1 << 53) < rate else { return nil }
            return 1 + Int64(random.below(UInt64(length - 1)))
        }
    }

    func send(_ body: [UInt8], gzip: Bool) async throws -> [UInt8] {
        try await slot.transport.send(body, gzip: gzip)
    }

    func attachmentHeld(_ sha256: String) async throws -> AttachmentHolding {
        try await slot.transport.attachmentHeld(sha256)
    }

    func uploadAttachment(
        _ sha256: String, size: Int64, from path: String, offset: Int64, progress: (@Sendable (Int64) -> Void)?
    ) async throws -> AttachmentHolding {
        let server = try slot.transport
        // What the server holds as the bytes arrive: the bytes it accepted from this call.
        let accepted = Mutex(offset)
        let counting: @Sendable (Int64) -> Void = { held in
            accepted.withLock { $0 = max($0, held) }
            progress?(held)
        }
        defer { ledger.received(sha256, accepted.withLock { $0 } - offset) }
        guard let cut = cut(size - offset) else {
            do {
                return try await server.uploadAttachment(sha256, size: size, from: path, offset: offset, progress: counting)
            } catch let rejected as SyncRequestRejected {
                if rejected.code == "uploadBusy" || rejected.code == "offsetMismatch" { ledger.busyRefusal() }
                throw rejected
            }
        }
        // The connection drops after `cut` bytes: the server reads a file that ends there.
        let prefix = try copyPrefix(of: path, upTo: offset + cut)
        defer { try? FileManager.default.removeItem(atPath: prefix) }
        _ = try await server.uploadAttachment(sha256, size: size, from: prefix, offset: offset, progress: counting)
        ledger.uploadCut()
        throw TransportError("the connection dropped after \(cut) of \(size - offset) bytes of an upload (simulated)")
    }

    func downloadAttachment(
        _ sha256: String, range: Range<Int64>?, to path: String, progress: (@Sendable (Int64) -> Void)?
    ) async throws {
        let server = try slot.transport
        let before = Self.size(path)
        try await server.downloadAttachment(sha256, range: range, to: path, progress: progress)
        let after = Self.size(path)
        guard let cut = cut(after - before) else {
            ledger.downloaded(after - before)
            return
        }
        // The connection dropped after `cut` bytes: the rest never arrived.
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        try handle.truncate(atOffset: UInt64(before + cut))
        try handle.close()
        ledger.downloaded(cut)
        ledger.downloadCut()
        throw TransportError("the connection dropped after \(cut) of \(after - before) bytes of a download (simulated)")
    }

    /// A copy of the first `length` bytes of the file at `path`.
    private func copyPrefix(of path: String, upTo length: Int64) throws -> String {
        let copy = "\(scratch)/cut-\(UUID().uuidString)"
        guard FileManager.default.createFile(atPath: copy, contents: nil) else { throw SimulationError("cannot create \(copy)") }
        let input = try FileHandle(forReadingFrom: URL(fileURLWithPath: path))
        let output = try FileHandle(forWritingTo: URL(fileURLWithPath: copy))
        defer {
            try? input.close()
            try? output.close()
        }
        var left = length
        while left > 0, let chunk = try input.read(upToCount: Int(min(left, 1 << 20))), !chunk.isEmpty {
            try output.write(contentsOf: chunk)
            left -= Int64(chunk.count)
        }
        return copy
    }

    private static func size(_ path: String) -> Int64 {
        ((try? FileManager.default.attributesOfItem(atPath: path))?[.size] as? NSNumber)?.int64Value ?? 0
    }
}
