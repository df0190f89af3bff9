import FieldMerge
import FieldMergeProtocol
import FieldMergeSQLite

extension SyncClient {
    /// Keeps the store in step with the server until ``stopLive()``: `channel` stays open
    /// (opened again with backoff and jitter when it fails, and on ``LiveOptions/fallback``
    /// after failures in a row); changes the server pushes are applied at once, without a
    /// request, when the store stands where they start; otherwise, and when the server says
    /// only that something changed, the client syncs. Local ``write(_:)``s are sent after
    /// ``LiveOptions/debounce``. Syncs never pile up: at most one runs and one waits, however
    /// many events and writes arrive (and an app's own ``sync(maxRounds:progress:)`` joins them).
    ///
    /// An app going to the background calls ``stopLive()`` and, back in front,
    /// `startLive` again: the channel's first event tells whether anything changed meanwhile.
    /// Starting while live mode runs stops the running one first.
    ///
    /// - Returns: What live mode does, in order; the stream keeps the latest 64 outcomes an
    ///   app has not read, and finishes when live mode stops.
    @discardableResult
    public func startLive(over channel: any LiveChannel, options: LiveOptions = LiveOptions()) -> AsyncStream<LiveOutcome> {
        live?.stop()
        let session = LiveSession(client: self, channel: channel, options: options)
        live = session
        updateState { $0.isLive = true }
        return session.outcomes
    }

    /// Stops live mode: closes the channel, stops a sync live mode started at its next step
    /// (a sync another caller waits for goes on), and returns when live mode has stopped.
    /// Nothing is lost: pending changes stay in the store for the next sync, and a request
    /// already sent stays in flight, to be sent again by the next sync (the server answers it
    /// once).
    public func stopLive() async {
        guard let session = live else { return }
        live = nil
        session.stop()
        await session.finished()
        updateState {
            $0.isLive = live != nil
            $0.isConnected = false
        }
    }

    /// Whether live mode runs.
    public var isLive: Bool { live != nil }

    /// Reads one opening of `channel` until it ends, each event handled as it arrives;
    /// whether any event came, and the failure that ended it.
    ///
    /// The loop runs on the client's executor, so an event goes from the channel's stream to
    /// ``handle(_:)`` without another hop between threads (with many devices in one process,
    /// such as `fieldmerge-server bench live`, each hop is felt).
    func follow(
        _ channel: any LiveChannel, report: AsyncStream<LiveOutcome>.Continuation, wake: @Sendable () -> Void
    ) async -> (received: Bool, failure: String?) {
        var received = false
        do {
            let events = channel.events(since: liveCursor, schema: schemaFingerprintForLive, subscriptions: liveSubscriptions)
            for try await event in events {
                received = true
                if case .ready(let revision) = event {
                    updateState { $0.isConnected = true }
                    report.yield(.connected(revision: revision))
                }
                switch handle(event) {
                case .nothing: break
                case .sync: wake()
                case .applied(let summary):
                    let now = store.wall.milliseconds()
                    updateState { $0.lastSynced = now }
                    report.yield(.applied(summary, revision: liveCursor))
                }
            }
        } catch {
            updateState { $0.isConnected = false }
            return (received, "\(error)")
        }
        updateState { $0.isConnected = false }
        return (received, nil)
    }

    /// What to do about one event of the channel.
    enum LiveAction {
        case nothing
        case sync
        case applied(SyncSummary)
    }

    /// Reacts to one event: apply pushed changes that start where the store stands (and no
    /// sync runs or waits, and no request awaits its answer, and, with scopes, the device
    /// holds what the page's `scopes` say), sync when the store is behind otherwise, or do
    /// nothing.
    func handle(_ event: LiveEvent) -> LiveAction {
        let cursor = store.maxRevision
        switch event {
        case .ready(let revision):
            if revision > cursor { return .sync }
            releaseCatchUp()
            let pending = (try? store.captureExternalWrites()).map { _ in (try? store.pendingChanges(limit: 1))?.isEmpty == false }
            return pending == true ? .sync : .nothing
        case .poke(let revision):
            return revision > cursor ? .sync : .nothing
        case .compressedChanges(_, let revision, _):
            // Channels inflate these as they read them; one handed over as it is, too.
            guard revision > cursor else { return .nothing }
            guard let inflated = try? event.inflated() else { return .sync }
            return handle(inflated)
        case .changes(let after, let revision, let json):
            guard revision > cursor else { return .nothing }
            guard after == cursor, !isSyncing, (try? store.inFlightRequest()) == nil else { return .sync }
            do {
                let response = try Self.decode(json, codec: codec, probe: probe)
                guard response.maxRevision == revision, !response.hasMore, response.changeSets.allSatisfy({ $0.conflict != true }) else {
                    return .sync
                }
                // A page of a server with scopes is for a device that holds what its `scopes`
                // say (the user's grants); one that holds less (roots still to download) or
                // other roots syncs, so that the server sees what it holds.
                guard response.scopes == (try holdings()) else { return .sync }
                var summary = SyncSummary()
                var refused: Set<String> = []
                var ahead: Prefetch?
                let exchange = Exchange(response: response, bytesSent: 0, bytesReceived: json.count)
                _ = try absorb(exchange, pending: [], summary: &summary, refused: &refused, ahead: &ahead)
                summary.rounds = 0
                return .applied(summary)
            } catch {
                // Whatever went wrong (a page this client cannot read), a sync gets it right.
                return .sync
            }
        }
    }

    /// The store's revision (where a channel opens).
    var liveCursor: Int64 { store.maxRevision }

    /// The roots the device subscribes to (where a channel opens); nil when none, or when
    /// the store cannot say (the channel then hears of the user's grants only).
    var liveSubscriptions: ScopeHoldings? { (try? subscriptionRequest())?.subscriptions }

    /// The fingerprint of the store's schema, which the channel names to the server.
    nonisolated var schemaFingerprintForLive: String { codec.schemaFingerprint }
}
