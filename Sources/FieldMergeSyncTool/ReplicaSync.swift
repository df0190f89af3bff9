import FieldMerge
import FieldMergeSQLite
import FieldMergeSync
import FieldMergeSyncHTTP
import Foundation

/// Progress of a `fieldmerge sync` run, added up over its attempts: for a progress line.
public struct ReplicaSyncProgress: Sendable, Equatable {
    /// Requests answered so far (catch-up pages and uploads).
    public var rounds: Int
    public var received: Int
    public var sent: Int
    /// Whether the server has more catch-up pages.
    public var hasMore: Bool
}

/// What `fieldmerge sync` does: syncs one replica file with a server over HTTP.
public enum ReplicaSync {
    /// Checks the input, opens (or creates) the replica, syncs it with the server, and lists
    /// what is left unsynced. Never throws: every ending is an ``ReplicaSyncOutcome`` with
    /// its exit code.
    ///
    /// Bad input changes nothing. A replica this run created is removed again when the first
    /// sync fails before any round completed (a wrong URL, a server with another schema), so
    /// a failed first attempt leaves no empty file behind.
    ///
    /// With ``ReplicaSyncInput/live``, the replica then stays in step with the server (its
    /// event stream, long-poll after three failures in a row) until `stop` returns; each
    /// thing live mode does goes to `live`, and the outcome adds up what it applied and synced.
    public static func run(
        _ input: ReplicaSyncInput, progress: (@Sendable (ReplicaSyncProgress) -> Void)? = nil,
        live: (@Sendable (LiveOutcome) -> Void)? = nil, stop: (@Sendable () async -> Void)? = nil
    ) async -> ReplicaSyncOutcome {
        let start = ContinuousClock.now
        var outcome = ReplicaSyncOutcome()
        do {
            let checked = try input.checked()
            outcome.created = !FileManager.default.fileExists(atPath: input.replica)
            await sync(input, checked, into: &outcome, progress: progress, live: live, stop: stop)
            if outcome.created, outcome.summary.rounds == 0, outcome.exit != .settled {
                for suffix in ["", "-wal", "-shm", "-journal"] { try? FileManager.default.removeItem(atPath: input.replica + suffix) }
            }
        } catch {
            outcome.badInput = error.message
        }
        let elapsed = ContinuousClock.now - start
        outcome.seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return outcome
    }

    /// Opens the replica and syncs; the store is closed when this returns.
    private static func sync(
        _ input: ReplicaSyncInput, _ checked: CheckedReplicaSyncInput, into outcome: inout ReplicaSyncOutcome,
        progress: (@Sendable (ReplicaSyncProgress) -> Void)?, live: (@Sendable (LiveOutcome) -> Void)?,
        stop: (@Sendable () async -> Void)?
    ) async {
        let store: Store
        do {
            store = try Store(.file(path: input.replica), schema: checked.schema)
        } catch {
            outcome.badInput = "cannot open the replica \(input.replica) with \(input.schemaName): \(error)"
            return
        }
        let transport = HTTPTransport(url: checked.url, token: checked.token)
        let client = SyncClient(
            store: store, transport: transport, gzip: input.gzip, batchSize: input.batchSize, downloadPageCacheKiB: input.downloadPageCacheKiB)
        let deadline = ContinuousClock.now + .milliseconds(Int(input.settleTimeout * 1_000))
        var pause = Duration.milliseconds(100)
        while true {
            outcome.attempts += 1
            let before = outcome.summary
            do {
                let summary = try await client.sync(maxRounds: input.maxRounds) { step in
                    progress?(ReplicaSyncProgress(
                        rounds: before.rounds + step.round, received: before.received + step.received,
                        sent: before.sent + step.sent, hasMore: step.hasMore))
                }
                outcome.summary.merge(summary)
                outcome.error = nil
                // The bound on rounds was reached: more may be waiting.
                if input.untilSettled, summary.rounds >= input.maxRounds, ContinuousClock.now < deadline { continue }
            } catch {
                outcome.summary.merge(error.completed)
                outcome.error = error
                if input.untilSettled, error.isRetryable, error.code != .cancelled, ContinuousClock.now + pause < deadline {
                    try? await Task.sleep(for: pause)
                    pause = min(pause * 2, .seconds(2))
                    continue
                }
            }
            break
        }
        if input.live, let stop {
            await stayLive(client, checked, until: stop, into: &outcome, report: live)
        }
        do {
            (outcome.unsynced, outcome.maxRevision) = try await client.write { store in
                (try store.unsyncedChanges(), store.maxRevision)
            }
        } catch {
            if outcome.error == nil {
                outcome.error = SyncError(.store, "cannot list the changes left: \(error)", isRetryable: false, cause: error)
            }
        }
        await client.close()
    }

    /// Live mode until `stop` returns: what it applied and synced goes into `outcome`, and
    /// the last sync's failure, if no sync succeeded after it.
    private static func stayLive(
        _ client: SyncClient, _ checked: CheckedReplicaSyncInput, until stop: @Sendable () async -> Void,
        into outcome: inout ReplicaSyncOutcome, report: (@Sendable (LiveOutcome) -> Void)?
    ) async {
        let channel = HTTPLiveChannel(syncURL: checked.url, token: checked.token)
        let options = LiveOptions(fallback: HTTPLiveChannel(syncURL: checked.url, mode: .longPoll(), token: checked.token))
        let outcomes = await client.startLive(over: channel, options: options)
        let watcher = Task { () -> (SyncSummary, SyncError?) in
            var total = SyncSummary()
            var failure: SyncError?
            for await event in outcomes {
                report?(event)
                switch event {
                case .applied(let summary, _), .synced(let summary, _):
                    total.merge(summary)
                    if case .synced = event { failure = nil }
                case .syncFailed(let error): failure = error
                case .connected, .disconnected: break
                }
            }
            return (total, failure)
        }
        await stop()
        await client.stopLive()
        let (total, failure) = await watcher.value
        outcome.summary.merge(total)
        if let failure { outcome.error = failure }
    }
}
