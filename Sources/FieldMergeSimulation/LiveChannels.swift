import FieldMergeProtocol
import FieldMergeServer
import FieldMergeSync
import FieldMergeWorkload
import Synchronization

extension ServerEndpoint {
    /// The live channel of one device to the server in this process: each time the device
    /// opens it, it subscribes to the server running *then*, so it survives restarts (a
    /// restart closes the old server, which ends its streams; while the server is down, the
    /// channel fails and the device backs off, as over HTTP).
    nonisolated func liveChannel(clientID: String) -> any LiveChannel {
        EndpointLiveChannel(endpoint: self, identity: liveIdentity(clientID))
    }
}

/// See ``ServerEndpoint/liveChannel(clientID:)``.
private struct EndpointLiveChannel: LiveChannel {
    let endpoint: ServerEndpoint
    let identity: SyncIdentity?

    func events(since revision: Int64, schema: String?) -> AsyncThrowingStream<LiveEvent, any Error> {
        events(since: revision, schema: schema, subscriptions: nil)
    }

    func events(since revision: Int64, schema: String?, subscriptions: ScopeHoldings?) -> AsyncThrowingStream<LiveEvent, any Error> {
        let (endpoint, identity) = (endpoint, identity)
        return AsyncThrowingStream { continuation in
            let forward = Task {
                guard let server = await endpoint.runningServer else {
                    continuation.finish(throwing: TransportError("the simulation's server is down"))
                    return
                }
                do {
                    let channel = InProcessTransport(server: server, identity: identity)
                    for try await event in channel.events(since: revision, schema: schema, subscriptions: subscriptions) {
                        continuation.yield(event)
                    }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in forward.cancel() }
        }
    }
}

/// A live channel that refuses connections and drops them (the event it was about to
/// deliver is lost with the connection), from a seeded generator. The drops count as
/// survived when every device converged (``Simulation/convergeLive()``).
final class FaultyLiveChannel: LiveChannel, Sendable {
    private let inner: any LiveChannel
    private let rate: Double
    private let random: Mutex<SplitMix64>
    private let ledger: FaultLedger

    init(_ inner: any LiveChannel, rate: Double, seed: UInt64, ledger: FaultLedger) {
        self.inner = inner
        self.rate = rate
        random = Mutex(SplitMix64(seed: seed))
        self.ledger = ledger
    }

    private func strikes() -> Bool {
        guard rate > 0, random.withLock({ Double($0.next() >> 11) / Double(1 << 53) }) < rate else { return false }
        ledger.injected(.droppedConnection)
        return true
    }

    func events(since revision: Int64, schema: String?) -> AsyncThrowingStream<LiveEvent, any Error> {
        events(since: revision, schema: schema, subscriptions: nil)
    }

    func events(since revision: Int64, schema: String?, subscriptions: ScopeHoldings?) -> AsyncThrowingStream<LiveEvent, any Error> {
        AsyncThrowingStream { continuation in
            let forward = Task { [self] in
                if strikes() {
                    continuation.finish(throwing: TransportError("simulated: the live connection was refused"))
                    return
                }
                do {
                    for try await event in inner.events(since: revision, schema: schema, subscriptions: subscriptions) {
                        if strikes() {
                            continuation.finish(throwing: TransportError("simulated: the live connection dropped"))
                            return
                        }
                        continuation.yield(event)
                    }
                    continuation.finish()
                } catch {
                    continuation.finish(throwing: error)
                }
            }
            continuation.onTermination = { _ in forward.cancel() }
        }
    }
}

/// What the devices' live sessions did, counted from their outcomes.
final class LiveTally: Sendable {
    private let counts = Mutex(LiveCounts())

    /// Counts `outcomes` until they finish (when live mode stops).
    func count(_ outcomes: AsyncStream<LiveOutcome>) -> Task<Void, Never> {
        Task { [self] in
            for await outcome in outcomes {
                counts.withLock { counts in
                    switch outcome {
                    case .connected: counts.connections += 1
                    case .applied(let summary, _):
                        counts.pagesApplied += 1
                        counts.recordsApplied += summary.received
                    case .synced: counts.syncs += 1
                    case .syncFailed: counts.failedSyncs += 1
                    case .disconnected(let error, _): if error != nil { counts.failedConnections += 1 }
                    }
                }
            }
        }
    }

    var snapshot: LiveCounts { counts.withLock { $0 } }
}

/// What the devices' live sessions did (``SimulationReport/live``).
public struct LiveCounts: Sendable, Equatable {
    /// Channels opened (a `ready` event received).
    public var connections = 0
    /// Channels that failed or were refused (each opened again after a backoff).
    public var failedConnections = 0
    /// Pages the server pushed that a device applied without a request, and their records.
    public var pagesApplied = 0, recordsApplied = 0
    /// Syncs live mode ran (told to, or sending local writes), and those that failed.
    public var syncs = 0, failedSyncs = 0
    /// Seconds from the last round's edits until every device held the server's revision
    /// with nothing pending, without an explicit sync.
    public var convergedAfter: Double?
}
