import ArgumentParser
import FieldMergeServer
import FieldMergeServerHTTP

/// `fieldmerge serve`'s options for live sync (Specs/live.md); the defaults are
/// `SyncHTTPServer.Configuration`'s and `LiveHub.Options`'.
struct ServeLiveOptions: ParsableArguments {
    private static let defaults = SyncHTTPServer.Configuration()
    private static let hub = LiveHub.Options()

    @Option(help: "Seconds a GET /sync/events connection lasts before the server ends it (the client opens another); less up to a tenth at random.")
    var liveLifetime: Double = seconds(defaults.liveLifetime)

    @Option(help: "Seconds a live connection may stay quiet before a keep-alive comment is sent.")
    var liveKeepAlive: Double = seconds(defaults.liveKeepAlive)

    @Option(help: "The longest a GET /sync/poll waits for an event, in seconds.")
    var longPollMaxWait: Double = seconds(defaults.longPollMaxWait)

    @Option(help: "The most live subscribers at once (per data set); one more is answered 503. Each also holds a connection: raise --max-connections with it.")
    var maxLiveSubscribers: Int = hub.maxSubscribers

    @Option(help: "The most records a pushed page carries; a larger change makes devices sync instead.")
    var livePageRecords: Int = hub.maxRecords

    func validate() throws {
        for (name, value) in [("--live-lifetime", liveLifetime), ("--live-keep-alive", liveKeepAlive), ("--long-poll-max-wait", longPollMaxWait)] {
            guard value > 0, value <= 86_400 else { throw ValidationError("\(name) must be within 0...86400 seconds (not 0)") }
        }
        guard maxLiveSubscribers > 0 else { throw ValidationError("--max-live-subscribers must be positive") }
        guard livePageRecords > 0 else { throw ValidationError("--live-page-records must be positive") }
    }

    /// `configuration` with these lifetimes and waits.
    func apply(to configuration: inout SyncHTTPServer.Configuration) {
        configuration.liveLifetime = .milliseconds(Int64(liveLifetime * 1000))
        configuration.liveKeepAlive = .milliseconds(Int64(liveKeepAlive * 1000))
        configuration.longPollMaxWait = .milliseconds(Int64(longPollMaxWait * 1000))
    }

    /// `options` with the hub's bounds.
    func apply(to options: inout RevisionServer.Options) {
        options.live.maxSubscribers = maxLiveSubscribers
        options.live.maxRecords = livePageRecords
    }
}
