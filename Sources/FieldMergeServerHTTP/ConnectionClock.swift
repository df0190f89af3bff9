import NIOCore

/// What one connection is doing, and when it must be closed if nothing happens: the state
/// behind ``ConnectionGuard``'s timeouts (Specs/http.md §3). Kept on the connection's event
/// loop; times are `NIODeadline`s, monotonic.
///
/// - Waiting for a request (a new connection, or one whose last response ended): closed at
///   `since + readTimeout` for a new connection, `since + idleTimeout` after a response.
/// - Receiving a request (from its first byte to the end of its body): closed at the
///   earlier of `lastBytes + readTimeout` and `firstByte + requestTimeout`.
/// - A request received and not answered yet, or a response being written: no deadline.
struct ConnectionClock {
    struct Timeouts: Sendable {
        var read: TimeAmount
        var request: TimeAmount
        var idle: TimeAmount
        /// How long a response may wait while the connection takes no more bytes.
        var write: TimeAmount = .seconds(30)
    }

    /// Why a connection is closed when its deadline passes.
    enum Expiry: Equatable {
        /// Waiting for a request: closed without a word.
        case idle
        /// A request that did not arrive in time: 408, then closed.
        case request
    }

    let timeouts: Timeouts
    /// The first byte of the request being received, nil between requests.
    private(set) var receivingSince: NIODeadline?
    private var lastBytes: NIODeadline
    /// When the connection last began waiting for a request.
    private var waitingSince: NIODeadline
    /// Whether a response has ended on this connection (then `idle` applies when waiting).
    private var answeredOne = false
    /// Request heads read whose responses have not ended.
    private var openRequests = 0
    /// A response head was written and its end not yet.
    private(set) var responding = false

    init(timeouts: Timeouts, now: NIODeadline) {
        self.timeouts = timeouts
        lastBytes = now
        waitingSince = now
    }

    mutating func bytesArrived(now: NIODeadline) {
        lastBytes = now
        if receivingSince == nil { receivingSince = now }
    }

    mutating func requestHead(now: NIODeadline) {
        openRequests += 1
        if receivingSince == nil { receivingSince = now }
    }

    mutating func requestEnded() { receivingSince = nil }

    mutating func responseHead() { responding = true }

    mutating func responseEnded(now: NIODeadline) {
        responding = false
        answeredOne = true
        openRequests = max(0, openRequests - 1)
        if openRequests == 0 { waitingSince = now }
    }

    /// A request's head has been read and its body not yet.
    var receivingBody: Bool { receivingSince != nil && openRequests > 0 }

    /// When the connection is to be closed, and why; nil while the server owes or writes a
    /// response.
    var deadline: (at: NIODeadline, expiry: Expiry)? {
        if responding { return nil }
        if let start = receivingSince {
            return (min(lastBytes + timeouts.read, start + timeouts.request), .request)
        }
        if openRequests > 0 { return nil }
        return (waitingSince + (answeredOne ? timeouts.idle : timeouts.read), .idle)
    }

    /// Since when the connection has been waiting for (the rest of) a request, or nil while
    /// a response is owed: the oldest is closed first when the connection limit is reached.
    var waitingFor: NIODeadline? {
        guard deadline != nil else { return nil }
        return receivingSince ?? waitingSince
    }
}
