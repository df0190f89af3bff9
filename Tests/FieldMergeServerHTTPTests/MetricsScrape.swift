import FieldMerge
import FieldMergeProtocol
import FieldMergeServer
import FieldMergeServerHTTP
import FieldMergeServerPrometheus
import FieldMergeServerSQLite
import Foundation

/// One sample of a Prometheus text page: `name{label="value",…} 3`.
struct MetricSample: Equatable, CustomStringConvertible {
    var name: String
    var labels: [String: String]
    var value: Double

    var description: String { "\(name)\(labels.sorted { $0.key < $1.key }) \(value)" }
}

/// A scraped `GET /metrics` page, read line by line.
struct MetricsPage {
    let samples: [MetricSample]
    let text: String

    init(_ text: String) throws {
        self.text = text
        var samples: [MetricSample] = []
        for line in text.split(separator: "\n") where !line.hasPrefix("#") {
            guard let space = line.lastIndex(of: " "), let value = Double(line[line.index(after: space)...]) else {
                throw MetricsPageError(line: String(line))
            }
            let series = line[..<space]
            var labels: [String: String] = [:]
            var name = String(series)
            if let brace = series.firstIndex(of: "{") {
                name = String(series[..<brace])
                let inner = series[series.index(after: brace)..<series.index(before: series.endIndex)]
                // The labels here never hold a comma or a quote.
                for pair in inner.split(separator: ",") {
                    let parts = pair.split(separator: "=", maxSplits: 1)
                    guard parts.count == 2 else { throw MetricsPageError(line: String(line)) }
                    labels[String(parts[0])] = String(parts[1].dropFirst().dropLast())
                }
            }
            samples.append(MetricSample(name: name, labels: labels, value: value))
        }
        self.samples = samples
    }

    /// The value of the series `name` with exactly `labels`; nil when there is none.
    func value(_ name: String, _ labels: [String: String] = [:]) -> Double? {
        samples.first { $0.name == name && $0.labels == labels }?.value
    }

    /// Every sample named `name`.
    func series(_ name: String) -> [MetricSample] { samples.filter { $0.name == name } }
}

struct MetricsPageError: Error { var line: String }

extension RawHTTP {
    /// `GET /metrics`, with `token` as a bearer token when given.
    static func scrape(port: Int, token: String? = nil) async throws -> Response {
        try await exchange(port: port, method: "GET", path: "/metrics", headers: token.map { ["Authorization": "Bearer \($0)"] } ?? [:])
    }
}

/// A server on the lists-and-tasks schema with one list (id 1, revision 1), recording into
/// `metrics` (its phases too).
func metricsServer(_ metrics: SyncMetrics) async throws -> RevisionServer {
    var options = RevisionServer.Options()
    options.probe = metrics.probe
    let server = try RevisionServer(.memory, schema: try httpTestSchema(), options: options)
    let record = WireRecord(id: -1, present: FieldMask([0]), values: [.text("Seed")])
    _ = try await server.handle(SyncRequest(maxRevision: 0, changeSets: [ChangeSet(entities: [
        EntityChanges(entity: "lists", create: [-1], records: [record]),
    ])]))
    return server
}

/// The body of a request with `changeSets`, as a device of the test schema sends it.
func metricsRequest(maxRevision: Int64, _ changeSets: [ChangeSet], client: String = "device", request: String) throws -> [UInt8] {
    let schema = try httpTestSchema()
    let body = SyncRequest(
        maxRevision: maxRevision, changeSets: changeSets, clientID: client, requestID: request, protocolVersion: WireProtocol.version,
        schemaVersion: schema.version, schemaFingerprint: schema.fingerprint)
    return WireCodec(schema: schema).encode(body)
}

/// A list record: its name, and the revision it answers for an update.
func listRecord(_ id: Int64, _ name: String, revision: Int64? = nil) -> WireRecord {
    WireRecord(id: id, present: FieldMask([0]), values: [.text(name)], revision: revision)
}
