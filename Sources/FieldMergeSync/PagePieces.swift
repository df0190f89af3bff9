import Dispatch
import FieldMergeProtocol
import Synchronization

/// A catch-up page read on a thread of its own, piece by piece
/// (``WireCodec/decodeResponse(_:piecesOf:_:)``), while the client applies it.
///
/// Reading starts as soon as the page has arrived (while the client still applies the page
/// before it) and runs at most ``depth`` pieces ahead of the client, then waits: no more
/// than that many pieces are held decoded besides the one being applied. The client takes
/// the pieces without leaving its actor (``next()`` waits on a semaphore when the reader is
/// behind), so a page is applied in one turn and nothing else on the client can commit
/// the catch-up's transaction halfway through it. Reading a piece takes about half as long
/// as merging and writing it, so the client seldom waits, and never for longer than one
/// piece takes to read. Dropping the last reference to a page stops its reader.
final class PagePieces: Sendable {
    enum Item: Sendable {
        case piece(EntityChanges)
        /// The page without its records: its lists and top-level values.
        case end(SyncResponse)
        case failed(any Error)
    }

    /// How many pieces the reader may hold ahead of the client.
    static let depth = 2

    private let channel = Channel()

    /// Starts reading `body` (a response, inflated) in pieces of `size` records; the time
    /// reading takes, waits for the client left out, goes to `probe` as
    /// ``SyncPhase/clientDecode``.
    init(_ body: [UInt8], codec: WireCodec, size: Int, probe: (any SyncProbe)?) {
        let channel = channel
        DispatchQueue.global().async { channel.read(body, codec: codec, size: size, probe: probe) }
    }

    deinit { channel.stop() }

    /// The next piece, or the end of the page, waiting for the reader when it is behind.
    func next() -> Item { channel.next() }

    /// What the reader and the client share.
    private final class Channel: Sendable {
        private let state = Mutex<(items: [Item], stopped: Bool)>(([], false))
        private let ready = DispatchSemaphore(value: 0)
        /// Made with 0 and raised to ``depth``: libdispatch refuses to free a semaphore whose
        /// count is below the one it was made with, which a page given up halfway leaves.
        private let space = DispatchSemaphore(value: 0)

        init() { for _ in 0..<PagePieces.depth { space.signal() } }

        func read(_ body: [UInt8], codec: WireCodec, size: Int, probe: (any SyncProbe)?) {
            let start = ContinuousClock.now
            var waited = Duration.zero
            let last: Item
            do {
                let page = try codec.decodeResponse(body, piecesOf: size) { piece in
                    let waitStart = ContinuousClock.now
                    space.wait()
                    waited += ContinuousClock.now - waitStart
                    guard !state.withLock({ $0.stopped }) else { throw CancellationError() }
                    push(.piece(piece))
                }
                last = .end(page)
            } catch {
                last = .failed(error)
            }
            probe?.record(.clientDecode, ContinuousClock.now - start - waited)
            push(last)
        }

        private func push(_ item: Item) {
            state.withLock { $0.items.append(item) }
            ready.signal()
        }

        func next() -> Item {
            ready.wait()
            let item = state.withLock { $0.items.removeFirst() }
            if case .piece = item { space.signal() }
            return item
        }

        /// The reader ends at its next piece, and drops what it held.
        func stop() {
            state.withLock {
                $0.stopped = true
                $0.items = []
            }
            space.signal()
        }
    }
}
