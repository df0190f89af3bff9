import ArgumentParser
import FieldMergeServerHTTP

/// `fieldmerge serve`'s options for slow and idle clients (Specs/http.md §3); the defaults
/// are `SyncHTTPServer.Configuration`'s.
struct ServeConnectionOptions: ParsableArguments {
    private static let defaults = SyncHTTPServer.Configuration()

    @Option(help: "Seconds a new connection may wait before its first byte, and a request between two reads of it.")
    var readTimeout: Double = seconds(defaults.readTimeout)

    @Option(help: "Seconds a whole request (head and body) may take to arrive from its first byte.")
    var requestTimeout: Double = seconds(defaults.requestTimeout)

    @Option(help: "Seconds a kept-alive connection may wait for its next request.")
    var idleTimeout: Double = seconds(defaults.idleTimeout)

    @Option(help: "Seconds a response may wait for a client that reads none of it before the connection is closed (a live subscriber that stopped reading).")
    var writeTimeout: Double = seconds(defaults.writeTimeout)

    @Option(help: "The most connections open at once; a new one beyond closes the one waiting longest for its request. Keep it well under the process's open-file limit (ulimit -n).")
    var maxConnections: Int = defaults.maxConnections

    func validate() throws {
        for (name, value) in [("--read-timeout", readTimeout), ("--request-timeout", requestTimeout), ("--idle-timeout", idleTimeout), ("--write-timeout", writeTimeout)] {
            guard value > 0, value <= 86_400 else { throw ValidationError("\(name) must be within 0...86400 seconds (not 0)") }
        }
        guard maxConnections > 0 else { throw ValidationError("--max-connections must be positive") }
    }

    /// `configuration` with these timeouts and limit.
    func apply(to configuration: inout SyncHTTPServer.Configuration) {
        configuration.readTimeout = .milliseconds(Int64(readTimeout * 1000))
        configuration.requestTimeout = .milliseconds(Int64(requestTimeout * 1000))
        configuration.idleTimeout = .milliseconds(Int64(idleTimeout * 1000))
        configuration.writeTimeout = .milliseconds(Int64(writeTimeout * 1000))
        configuration.maxConnections = maxConnections
    }
}

/// `duration` in seconds, for options' defaults.
func seconds(_ duration: Duration) -> Double {
    Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
}
