import FieldMerge
import FieldMergeProtocol
import Synchronization

/// Tells a server's live subscribers what changed (Specs/live.md): each commit that moves the
/// server's revision wakes the hub, which reads the changes once and hands every subscriber
/// the event it needs: the changes themselves (one page, encoded once for every subscriber
/// that reads the same entities; with scopes, once per identity and revision), a
/// ``LiveEvent/poke(revision:)`` when a page would be too large or its device must ask
/// itself (its grants changed, a schema version it does not answer), or nothing when
/// nothing it may read changed.
///
/// A subscriber costs a small record and a buffer of at most ``Options/buffer`` events, no
/// thread: a subscriber that does not read loses its oldest events, never holds more, and
/// its device, finding its cursor behind the next event it reads, syncs. Bursts coalesce:
/// while the hub reads one step, later commits wait and are read together in the next.
public final class LiveHub: Sendable {
    /// Bounds of the hub.
    public struct Options: Sendable {
        /// The most records a ``LiveEvent/changes(after:revision:response:)`` event carries;
        /// a larger step is a ``LiveEvent/poke(revision:)``. 1,000 by default.
        public var maxRecords = 1_000
        /// The most bytes of page such an event carries (else a poke): of response JSON, or
        /// of gzip'd base64 for a device that reads compressed pages. 256 KiB.
        public var maxBytes = 256 << 10
        /// From how many bytes of JSON a page goes compressed to a device that reads
        /// compressed pages (``LiveEvent/compressedChanges(after:revision:body:)``); a smaller
        /// one gains little from gzip and loses a third to base64. 1 KiB.
        public var compressFrom = 1 << 10
        /// Events kept per subscriber that has not read them yet; past it the oldest go. 16.
        public var buffer = 16
        /// The most subscribers at once (a subscription past it is refused, 503). 10,000.
        public var maxSubscribers = 10_000
        /// The least time between the starts of two steps: a commit after a quiet spell is
        /// read at once, the commits of a burst are read together at most this often, so a
        /// device hears at most a few events a second however fast others write (battery,
        /// and the cost of waking every device for each commit). 250 ms by default.
        public var minInterval: Duration = .milliseconds(250)

        public init() {}
    }

    /// Where a subscriber's events go: an `AsyncStream`'s continuation for
    /// ``subscribe(identity:takesPages:subscriptions:scopedPages:version:compressed:)``, or
    /// what an endpoint writes from (``subscribe(identity:takesPages:subscriptions:scopedPages:version:compressed:sink:)``).
    package struct Sink: Sendable {
        /// Hands on one event; never blocks (a sink that keeps too many drops its oldest).
        package let yield: @Sendable (LiveEvent) -> Void
        /// The hub ends the subscription (the server is closing).
        package let finish: @Sendable () -> Void

        package init(yield: @escaping @Sendable (LiveEvent) -> Void, finish: @escaping @Sendable () -> Void) {
            self.yield = yield
            self.finish = finish
        }
    }

    /// What a subscriber is, fixed when it subscribes: held by reference, so that a step
    /// copies one reference per subscriber instead of every field.
    final class Subscription: Sendable {
        let identity: SyncIdentity?
        let sink: Sink
        /// Whether it takes `changes` events (a device of the server's current schema version,
        /// or of an older one the server answers).
        let takesPages: Bool
        /// The older schema version its device speaks (pages projected to it), or nil.
        let version: WireVersion?
        /// Whether its device applies a page of a server with scopes only when the page's
        /// `scopes` are what it holds (`pages=scoped`, Specs/live.md §3); else it gets pokes.
        let takesScopedPages: Bool
        /// Whether its device reads compressed pages (`encoding=gzip`, Specs/live.md §3).
        let takesCompressed: Bool
        /// The roots its device subscribes to (servers with scopes, Specs/scopes.md §6).
        let subscriptions: ScopeHoldings?

        init(
            identity: SyncIdentity?, sink: Sink, takesPages: Bool, version: WireVersion?, takesScopedPages: Bool, takesCompressed: Bool,
            subscriptions: ScopeHoldings?
        ) {
            self.identity = identity
            self.sink = sink
            self.takesPages = takesPages
            self.version = version
            self.takesScopedPages = takesScopedPages
            self.takesCompressed = takesCompressed
            self.subscriptions = subscriptions
        }
    }

    /// One subscriber: who it is and where its device stands as far as the hub knows.
    struct Subscriber {
        let subscription: Subscription
        /// The revision its device was last brought to by an event (`ready`, `changes`, `poke`).
        var cursor: Int64
        /// The revision up to which the hub looked for it: nothing it may read changed in
        /// `cursor ... seen`.
        var seen: Int64
        /// The roots its identity was granted when the hub last looked (servers with scopes).
        var grants: [RootSet]?

        var identity: SyncIdentity? { subscription.identity }
        var sink: Sink { subscription.sink }
        var takesPages: Bool { subscription.takesPages }
        var version: WireVersion? { subscription.version }
        var takesScopedPages: Bool { subscription.takesScopedPages }
        var takesCompressed: Bool { subscription.takesCompressed }
        var subscriptions: ScopeHoldings? { subscription.subscriptions }
    }

    struct State {
        /// The hub's server (which owns the hub), set once it is made.
        weak var server: RevisionServer?
        var subscribers: [Int: Subscriber] = [:]
        /// The latest revision the hub has read.
        var published: Int64
        /// The latest revision it was told of.
        var target: Int64
        var publishing = false
        /// Whether the hub was told of a revision since its current step began.
        var told = false
        /// When the last step began.
        var lastStep: ContinuousClock.Instant?
        /// Steps read so far.
        var steps = 0
        /// Set by ``finishAll()``: the server is closing, and nobody subscribes any more.
        var closed = false
    }

    public let options: Options
    /// Whether the server has scope rules (events are then pokes, decided per identity).
    let scoped: Bool
    let state: Mutex<State>
    private let ids = Atomic<Int>(0)

    init(revision: Int64, options: Options, scoped: Bool) {
        self.options = options
        self.scoped = scoped
        state = Mutex(State(published: revision, target: revision))
    }

    /// Subscribers now.
    public var subscribers: Int { state.withLock { $0.subscribers.count } }

    /// The latest revision the hub has read (what a new subscriber's `ready` says).
    public var revision: Int64 { state.withLock { $0.published } }

    /// A new subscriber's events: first ``LiveEvent/ready(revision:)`` with the hub's
    /// revision (a device behind it syncs), then what changes after it. Ending the iteration
    /// (or dropping the stream) unsubscribes.
    ///
    /// - Parameters:
    ///   - identity: Who subscribes (as for a request): it receives only what it may read.
    ///   - takesPages: False for a device that must sync itself for every change (a client of
    ///     a schema version the server does not answer): it gets pokes only.
    ///   - version: The older schema version the device speaks (`WireCodec/version(fingerprint:)`):
    ///     its pages are projected to it (``WireVersion/project(_:)``) and written with its codec.
    /// - Throws: ``ServerError/Code/unavailable`` past ``Options/maxSubscribers``, and once the
    ///   server is closing (``finishAll()``): a subscriber then would never hear anything.
    ///   - subscriptions: The roots the device subscribes to (`SyncRequest/subscriptions`):
    ///     with scopes, it is also told of changes under those its grants allow.
    ///   - scopedPages: With scopes: whether the device applies a page only when the page's
    ///     `scopes` equal what it holds, and syncs otherwise (`SyncClient` does). Such a
    ///     device that `takesPages` gets small changes as pages; any other gets pokes.
    ///   - compressed: Whether the device reads pages gzip'd in base64
    ///     (``LiveEvent/compressedChanges(after:revision:body:)``): it gets those of
    ///     ``Options/compressFrom`` bytes or more that way.
    public func subscribe(
        identity: SyncIdentity?, takesPages: Bool = true, subscriptions: ScopeHoldings? = nil, scopedPages: Bool = false,
        version: WireVersion? = nil, compressed: Bool = false
    ) throws(ServerError) -> AsyncStream<LiveEvent> {
        let (stream, continuation) = AsyncStream.makeStream(of: LiveEvent.self, bufferingPolicy: .bufferingNewest(max(1, options.buffer)))
        let id = try subscribe(
            identity: identity, takesPages: takesPages, subscriptions: subscriptions, scopedPages: scopedPages, version: version,
            compressed: compressed, sink: Sink(yield: { continuation.yield($0) }, finish: { continuation.finish() }))
        continuation.onTermination = { [weak self] _ in self?.unsubscribe(id) }
        return stream
    }

    /// Subscribes as ``subscribe(identity:takesPages:subscriptions:scopedPages:version:compressed:)``
    /// does, with the events handed to `sink` as they come (`ready` first, before this
    /// returns): for an endpoint that writes them from a stream of its own, with no task
    /// between the hub and it. The sink keeps at most ``Options/buffer`` events its reader
    /// has not taken. Returns the subscriber's id, for ``unsubscribe(_:)``.
    package func subscribe(
        identity: SyncIdentity?, takesPages: Bool = true, subscriptions: ScopeHoldings? = nil, scopedPages: Bool = false,
        version: WireVersion? = nil, compressed: Bool = false, sink: Sink
    ) throws(ServerError) -> Int {
        let id = ids.add(1, ordering: .relaxed).newValue
        let subscription = Subscription(
            identity: identity, sink: sink, takesPages: takesPages, version: version, takesScopedPages: scopedPages,
            takesCompressed: compressed, subscriptions: subscriptions)
        let maxSubscribers = options.maxSubscribers
        let scoped = scoped
        try state.withLock { (state: inout State) throws(ServerError) in
            guard !state.closed else { throw ServerError(.unavailable, "the server is closing; try again later") }
            guard state.subscribers.count < maxSubscribers else {
                throw ServerError(.unavailable, "the server has \(maxSubscribers) live subscribers, its limit; try again later")
            }
            state.subscribers[id] = Subscriber(subscription: subscription, cursor: state.published, seen: state.published)
            sink.yield(.ready(revision: state.published))
        }
        // With scopes, the hub learns the subscriber's grants at once (what it compares later).
        if scoped { wake() }
        return id
    }

    /// Ends subscriber `id`'s subscription (its reader went); nothing more goes to its sink.
    package func unsubscribe(_ id: Int) {
        _ = state.withLock { $0.subscribers.removeValue(forKey: id) }
    }

    /// Ties the hub to the server that owns it (once, as the server is made).
    func attach(_ server: RevisionServer) {
        state.withLock { $0.server = server }
    }

    /// Steps read so far (tests).
    package var steps: Int { state.withLock { $0.steps } }

    /// Whether the hub is reading no step now (tests wait for it).
    package var isIdle: Bool { state.withLock { !$0.publishing } }

    /// Ends every subscription (a server shutting down): each stream finishes, and later
    /// subscriptions are refused.
    public func finishAll() {
        let continuations = state.withLock { state in
            state.closed = true
            defer { state.subscribers.removeAll() }
            return state.subscribers.values.map(\.sink)
        }
        for sink in continuations { sink.finish() }
    }

    /// Tells the hub the server's revision moved to `revision` (after a commit here, or one
    /// another process made). Returns at once; the hub reads the changes on a task of its own.
    public func advance(to revision: Int64) {
        state.withLock {
            $0.target = max($0.target, revision)
            $0.told = true
        }
        wake()
    }

    /// Starts a task that reads steps, unless one runs or no subscriber needs one.
    private func wake() {
        let server = state.withLock { state -> RevisionServer? in
            guard !state.publishing, let server = state.server else { return nil }
            if state.subscribers.isEmpty {
                state.published = max(state.published, state.target)
                return nil
            }
            guard state.subscribers.values.contains(where: { needsStep($0, target: state.target) }) else { return nil }
            state.publishing = true
            return server
        }
        if let server { Task { await self.publish(server) } }
    }

    /// Whether a step must look at `subscriber`: it has not seen `target`, or (with scopes)
    /// its grants are not known yet.
    func needsStep(_ subscriber: Subscriber, target: Int64) -> Bool {
        subscriber.seen < target || (scoped && subscriber.grants == nil)
    }
}
