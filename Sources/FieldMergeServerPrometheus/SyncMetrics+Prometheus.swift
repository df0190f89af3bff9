import FieldMerge
import FieldMergeServerHTTP
import Prometheus

extension SyncMetrics {
    /// The endpoint's metrics in a Prometheus registry of their own, served as its text
    /// format (0.0.4) on `GET /metrics`, with histogram buckets from 0.1 ms (a phase) to
    /// 10 s (a large request).
    ///
    /// - Parameters:
    ///   - schema: The entities whose names may be labels.
    ///   - token: The bearer token `GET /metrics` needs; nil: loopback clients only.
    ///   - registry: Where the metrics are kept (a new one by default; pass yours to add
    ///     your own metrics to the same page).
    public static func prometheus(
        schema: Schema, token: String?, registry: PrometheusCollectorRegistry = PrometheusCollectorRegistry()
    ) -> SyncMetrics {
        var factory = PrometheusMetricsFactory(registry: registry)
        factory.durationHistogramBuckets = [
            "fieldmerge_sync_request_duration_seconds": requestBuckets,
            "fieldmerge_sync_phase_duration_seconds": phaseBuckets,
        ]
        return SyncMetrics(
            factory: factory, schema: schema, access: token.map { .token($0) } ?? .loopback,
            contentType: "text/plain; version=0.0.4; charset=utf-8", exposition: { registry.emitToBuffer() })
    }

    /// A request's buckets: 1 ms to 10 s.
    static let requestBuckets: [Duration] = [
        .milliseconds(1), .microseconds(2_500), .milliseconds(5), .milliseconds(10), .milliseconds(25), .milliseconds(50),
        .milliseconds(100), .milliseconds(250), .milliseconds(500), .seconds(1), .microseconds(2_500_000), .seconds(5), .seconds(10),
    ]

    /// A phase's buckets: 0.1 ms to 10 s.
    static let phaseBuckets: [Duration] = [.microseconds(100), .microseconds(250), .microseconds(500)] + requestBuckets
}
