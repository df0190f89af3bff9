import CoreMetrics
import FieldMerge
import FieldMergeProtocol

/// The sync endpoint's metrics, recorded through swift-metrics with a factory of your choice,
/// and served as `GET /metrics` (Specs/http.md, "Metrics and logs").
///
/// Set it as ``SyncHTTPServer/Configuration/metrics`` and give ``probe`` to the server's
/// options (`RevisionServer.Options.probe`) for the phase timings. The endpoint records,
/// per `POST /sync`: the request by outcome and status, its duration, change sets and
/// records applied, conflicts and refusals by entity and code, catch-up records and bytes,
/// stored replies served, storage errors; and the live subscribers open. Labels are bounded:
/// entity names of `schema` (another is `other`), codes of the protocol; never a user,
/// client, record or tenant.
///
/// The backend is not linked here: `FieldMergeServerPrometheus` makes one for Prometheus
/// (`SyncMetrics.prometheus(schema:token:)`), which `fieldmerge serve --metrics` uses.
public struct SyncMetrics: Sendable {
    /// Who may read `GET /metrics`.
    public enum Access: Sendable, Equatable {
        /// Requests with `Authorization: Bearer <token>` (compared in constant time).
        case token(String)
        /// Requests from a loopback address (127.0.0.0/8, ::1) only; any other is answered 403.
        case loopback
    }

    let factory: any MetricsFactory
    let entities: Set<String>
    /// Who may read `GET /metrics`.
    public let access: Access
    /// The `Content-Type` of `GET /metrics`.
    public let contentType: String
    private let exposition: @Sendable () -> [UInt8]

    /// - Parameters:
    ///   - factory: Makes the counters, timers and meters (the backend).
    ///   - schema: The entities whose names may be labels.
    ///   - access: Who may read `GET /metrics`: a bearer token, or loopback clients.
    ///   - contentType: What `exposition` writes.
    ///   - exposition: The metrics as `GET /metrics` answers them (the backend's text).
    public init(
        factory: any MetricsFactory, schema: Schema, access: Access, contentType: String,
        exposition: @escaping @Sendable () -> [UInt8]
    ) {
        self.factory = factory
        entities = Set(schema.entities.map(\.name))
        self.access = access
        self.contentType = contentType
        self.exposition = exposition
    }

    /// The metrics as `GET /metrics` answers them.
    public func render() -> [UInt8] { exposition() }

    /// Hears the server's phases (`SyncPhase`) as `fieldmerge_sync_phase_duration_seconds`:
    /// give it to `RevisionServer.Options.probe`; the endpoint times its own (decode,
    /// encode, gzip) with it too.
    public var probe: any SyncProbe { PhaseTimer(factory: factory) }

    /// Records one `POST /sync`.
    func record(_ sync: SyncObservation) {
        let status = String(sync.status)
        count("fieldmerge_sync_requests_total", ("outcome", sync.outcome.rawValue), ("status", status))
        Timer(label: "fieldmerge_sync_request_duration_seconds", dimensions: [("outcome", sync.outcome.rawValue)], factory: factory)
            .recordNanoseconds(Self.nanoseconds(sync.duration))
        if let code = sync.errorCode {
            count("fieldmerge_sync_errors_total", ("status", status), ("code", code))
            if sync.status == 500 { count("fieldmerge_storage_errors_total", ("code", code)) }
            return
        }
        count("fieldmerge_sync_request_bytes_total", by: sync.bytesIn)
        count("fieldmerge_sync_response_bytes_total", by: sync.bytesOut)
        count("fieldmerge_change_sets_total", ("result", "applied"), by: sync.changeSetsApplied)
        count("fieldmerge_change_sets_total", ("result", "conflict"), by: sync.changeSetsInConflict)
        for (entity, records) in sync.recordsApplied { count("fieldmerge_records_applied_total", ("entity", entity), by: records) }
        for (entity, changeSets) in sync.conflicts { count("fieldmerge_conflicts_total", ("entity", entity), by: changeSets) }
        for (key, records) in sync.refusals {
            count("fieldmerge_refusals_total", ("entity", key.entity), ("code", key.code), by: records)
        }
        for (entity, records) in sync.catchUpRecords { count("fieldmerge_catchup_records_total", ("entity", entity), by: records) }
        count("fieldmerge_catchup_bytes_total", by: sync.catchUpBytes)
        if sync.replayed { count("fieldmerge_stored_replies_served_total") }
    }

    /// A live subscriber came (`by: 1`) or went (`by: -1`); `channel` is `events` or `poll`.
    func liveSubscribers(_ channel: String, by change: Int) {
        let meter = Meter(label: "fieldmerge_live_subscribers", dimensions: [("channel", channel)], factory: factory)
        if change >= 0 { meter.increment(by: Double(change)) } else { meter.decrement(by: Double(-change)) }
    }

    /// Adds `amount` (when positive) to the counter `label` with `dimensions`. A counter of
    /// zero is still made, so that it shows (as 0) from the first request on.
    private func count(_ label: String, _ dimensions: (String, String)..., by amount: Int = 1) {
        let counter = Counter(label: label, dimensions: dimensions, factory: factory)
        if amount > 0 { counter.increment(by: amount) }
    }

    static func nanoseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds &* 1_000_000_000 &+ attoseconds / 1_000_000_000
    }
}

/// ``SyncMetrics/probe``: the server's phases, as one histogram with a `phase` label. The
/// client's phases never reach a server, and `log` (once per record, inside `serverApply`)
/// is left out.
struct PhaseTimer: SyncProbe {
    let timers: [SyncPhase: Timer]

    init(factory: any MetricsFactory) {
        var timers: [SyncPhase: Timer] = [:]
        for phase in Self.phases {
            timers[phase] = Timer(label: "fieldmerge_sync_phase_duration_seconds", dimensions: [("phase", phase.rawValue)], factory: factory)
        }
        self.timers = timers
    }

    static let phases: [SyncPhase] = [.serverDecode, .catchUp, .serverApply, .replyStorage, .serverCommit, .responseEncode, .responseGzip]

    func record(_ phase: SyncPhase, _ duration: Duration) {
        timers[phase]?.recordNanoseconds(SyncMetrics.nanoseconds(duration))
    }
}
