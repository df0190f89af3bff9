import FieldMerge
import FieldMergeProtocol
import FieldMergeServer
import Synchronization

/// What the operator's console shows that no storage keeps, recorded by the endpoint from
/// each `POST /sync` (the same ``SyncObservation`` the metrics record), in memory and
/// bounded: per minute, the last hour; per device, its last answer (the revision it reached,
/// so how far behind it is); the last failures.
final class ConsoleTracker: Sendable {
    /// Counts of one minute (or since start).
    struct Counts: Sendable {
        /// The minute's start, in milliseconds since the epoch (0 for totals).
        var minute: Int64 = 0
        var requests = 0
        /// 200 with nothing in conflict or refused.
        var ok = 0
        /// Change sets answered as conflicts.
        var conflicts = 0
        /// Records refused (`__refused__`).
        var refusals = 0
        /// Requests refused as they stand (4xx but 408, 429).
        var rejected = 0
        /// Requests answered with a retryable failure (5xx, 408, 429).
        var retryable = 0
        /// Revisions committed (the data set's revision after a request less before it).
        var revisions: Int64 = 0
        /// Records of applied change sets.
        var records = 0
    }

    /// A device as its last request left it.
    struct Device: Sendable {
        var client: String
        var tenant: String?
        var user: String?
        /// Milliseconds since the epoch.
        var lastSeen: Int64
        /// The revision its last answer brought it to.
        var reached: Int64
        /// Its last answer was a catch-up page with more to come.
        var hasMore: Bool
        var requests = 0
        var conflicts = 0
        var refusals = 0
        /// The status of its last request, and its error code when it failed.
        var lastStatus: Int
        var lastError: String?
    }

    /// A failed request.
    struct Failure: Sendable {
        var time: Int64
        var status: Int
        var code: String
        var client: String?
        var message: String
    }

    struct State: Sendable {
        /// Per minute, at `minute / 60_000 % minutes`.
        var minutes: [Counts]
        var totals = Counts()
        var devices: [String: Device] = [:]
        /// Per tenant ("" for one data set): the highest revision an answer carried.
        var revisions: [String: Int64] = [:]
        /// The newest last.
        var failures: [Failure] = []
        var appliedByEntity: [String: Int] = [:]
        var conflictsByEntity: [String: Int] = [:]
        var refusalsByKey: [SyncObservation.RefusalKey: Int] = [:]
        /// The data set's statistics, when they were read (a monotonic time), or why not.
        var statistics: (at: ContinuousClock.Instant, value: Result<ConsoleDataSetStatistics, ConsoleStatisticsError>)?
        var statisticsReadAt: Int64 = 0
    }

    struct ConsoleStatisticsError: Error { var message: String }

    /// The minutes kept: an hour.
    static let minutes = 60
    /// The most devices kept; past it the one seen longest ago is forgotten.
    static let maxDevices = 10_000
    /// The most failures kept.
    static let maxFailures = 20

    let clock: any WallClock
    let started: Int64
    let state: Mutex<State>

    init(clock: any WallClock = SystemWallClock()) {
        self.clock = clock
        started = Int64(clock.milliseconds())
        state = Mutex(State(minutes: Array(repeating: Counts(), count: Self.minutes)))
    }

    var now: Int64 { Int64(clock.milliseconds()) }

    /// Records one `POST /sync`: its observation, and what the server did when it answered.
    func record(
        _ sync: SyncObservation, request: SyncRequest?, handled: SyncExchange.Handled?, identity: SyncIdentity?, error: WireErrorBody?
    ) {
        let now = self.now
        state.withLock { state in
            let minute = now / 60_000 * 60_000
            let slot = Int(now / 60_000 % Int64(Self.minutes))
            if state.minutes[slot].minute != minute { state.minutes[slot] = Counts(minute: minute) }
            var revisions: Int64 = 0
            if let handled, !handled.replayed { revisions = max(0, handled.revisionAfter - handled.revisionBefore) }
            func add(_ counts: inout Counts) {
                counts.requests += 1
                switch sync.outcome {
                case .ok: counts.ok += 1
                case .conflict: break
                case .rejected: counts.rejected += 1
                case .retryable: counts.retryable += 1
                }
                counts.conflicts += sync.changeSetsInConflict
                counts.refusals += sync.refusalsTotal
                counts.revisions += revisions
                counts.records += sync.recordsAppliedTotal
            }
            add(&state.minutes[slot])
            add(&state.totals)
            for (entity, count) in sync.recordsApplied { state.appliedByEntity[entity, default: 0] += count }
            for (entity, count) in sync.conflicts { state.conflictsByEntity[entity, default: 0] += count }
            for (key, count) in sync.refusals { state.refusalsByKey[key, default: 0] += count }
            let tenant = identity?.tenant ?? ""
            if let handled {
                if state.revisions[tenant] != nil || state.revisions.count < Self.maxDevices {
                    state.revisions[tenant] = max(state.revisions[tenant] ?? 0, handled.revisionAfter)
                }
            }
            if let error {
                state.failures.append(Failure(
                    time: now, status: sync.status, code: sync.errorCode ?? error.error, client: request?.clientID,
                    message: String(error.message.prefix(300))))
                if state.failures.count > Self.maxFailures { state.failures.removeFirst(state.failures.count - Self.maxFailures) }
            }
            guard let client = request?.clientID else { return }
            let key = tenant + "\u{0}" + client
            var device = state.devices[key] ?? Device(
                client: client, tenant: identity?.tenant, user: identity?.user, lastSeen: now, reached: request?.maxRevision ?? 0,
                hasMore: false, lastStatus: sync.status)
            device.user = identity?.user ?? device.user
            device.lastSeen = now
            device.requests += 1
            device.conflicts += sync.changeSetsInConflict
            device.refusals += sync.refusalsTotal
            device.lastStatus = sync.status
            device.lastError = error.map { sync.errorCode ?? $0.error }
            if let handled {
                device.reached = handled.response.maxRevision
                device.hasMore = handled.response.hasMore
            } else if let request {
                device.reached = request.maxRevision
            }
            if state.devices[key] == nil, state.devices.count >= Self.maxDevices,
                let oldest = state.devices.min(by: { $0.value.lastSeen < $1.value.lastSeen })?.key
            {
                state.devices[oldest] = nil
            }
            state.devices[key] = device
        }
    }

    /// The data set's statistics from `console`, read again when older than its interval.
    func statistics(_ console: SyncConsole) async -> (value: Result<ConsoleDataSetStatistics, ConsoleStatisticsError>, readAt: Int64)? {
        guard let read = console.dataSet else { return nil }
        let cached = state.withLock { state in state.statistics.map { ($0.at, $0.value, state.statisticsReadAt) } }
        if let cached, ContinuousClock.now - cached.0 < console.statisticsInterval { return (cached.1, cached.2) }
        let value: Result<ConsoleDataSetStatistics, ConsoleStatisticsError>
        do { value = .success(try await read()) } catch { value = .failure(ConsoleStatisticsError(message: "\(error)")) }
        let readAt = now
        state.withLock { state in
            state.statistics = (ContinuousClock.now, value)
            state.statisticsReadAt = readAt
        }
        return (value, readAt)
    }
}
