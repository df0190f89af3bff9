import ArgumentParser
import FieldMerge
import FieldMergeServer
import FieldMergeServerHTTP
import FieldMergeServerPrometheus
import Foundation
import Logging

/// `fieldmerge serve`'s options for metrics (`GET /metrics`) and the log's format
/// (Specs/http.md, "Metrics and logs").
struct ServeMetricsOptions: ParsableArguments {
    enum LogFormat: String, ExpressibleByArgument, CaseIterable { case text, json }

    @Flag(help: "Serve GET /metrics (Prometheus text format): requests, latencies per phase, change sets, conflicts, refusals, catch-up, live subscribers. Without --metrics-token-file or --metrics-token-env it answers loopback clients (127.0.0.0/8, ::1) only, 403 to others.")
    var metrics = false

    @Option(help: "GET /metrics needs 'Authorization: Bearer <token>' with the token in this file (one trailing newline ignored); 401 without it.")
    var metricsTokenFile: String?

    @Option(help: "GET /metrics needs 'Authorization: Bearer <token>' with the token in this environment variable; 401 without it.")
    var metricsTokenEnv: String?

    @Option(help: "The log's format on standard error: text (one line per event) or json (one JSON object per line).")
    var logFormat: LogFormat = .text

    func validate() throws {
        guard metricsTokenFile == nil || metricsTokenEnv == nil else {
            throw ValidationError("give at most one of --metrics-token-file and --metrics-token-env")
        }
        if !metrics, metricsTokenFile != nil || metricsTokenEnv != nil {
            throw ValidationError("--metrics-token-file and --metrics-token-env need --metrics")
        }
    }

    /// Sends every log of the process through the chosen format; call once, first.
    func bootstrapLogging() {
        guard logFormat == .json else { return }
        LoggingSystem.bootstrap { label in JSONLogHandler(label: label) }
    }

    /// The endpoint's metrics, nil without `--metrics`; a token that cannot be read exits
    /// with code 2.
    func load(schema: Schema) throws -> SyncMetrics? {
        guard metrics else { return nil }
        return SyncMetrics.prometheus(schema: schema, token: try token())
    }

    private func token() throws -> String? {
        var token: String?
        var source = ""
        if let metricsTokenFile {
            source = "--metrics-token-file \(metricsTokenFile)"
            guard let text = try? String(contentsOfFile: metricsTokenFile, encoding: .utf8) else {
                ServeCommand.fail("\(source): cannot read the file")
                throw ExitCode(2)
            }
            token = text.hasSuffix("\n") ? String(text.dropLast()) : text
        } else if let metricsTokenEnv {
            source = "--metrics-token-env \(metricsTokenEnv)"
            token = ProcessInfo.processInfo.environment[metricsTokenEnv]
        } else {
            return nil
        }
        guard let token, !token.isEmpty, !token.contains(where: \.isWhitespace) else {
            ServeCommand.fail("\(source): no token (empty, unset, or holding white space)")
            throw ExitCode(2)
        }
        return token
    }
}
