import ServiceLifecycle

extension SyncHTTPServer {
    /// Serves until the process receives SIGTERM or SIGINT, then shuts down gracefully and
    /// returns: the server stops accepting connections and lets the requests in flight
    /// finish (each one storage transaction) before this returns.
    ///
    /// The one call an app needs to embed the server; its manifest names only FieldMerge's
    /// products (swift-service-lifecycle, which does the signal handling, comes with
    /// `FieldMergeServerHTTP`):
    ///
    /// ```swift
    /// let http = SyncHTTPServer(server: try RevisionServer(.file(path: "server.sqlite"), schema: schema),
    ///                           configuration: .init(host: "0.0.0.0", port: 8080))
    /// try await http.runUntilShutdownSignal()
    /// ```
    ///
    /// Cancelling the calling task stops the server at once instead (requests in flight are
    /// cut off). To run it beside other services, put the server, a `Service`, in a
    /// `ServiceGroup` of your own instead.
    ///
    /// - Throws: When the address cannot be bound (port in use, no such address).
    public func runUntilShutdownSignal() async throws {
        let group = ServiceGroup(services: [self], gracefulShutdownSignals: [.sigterm, .sigint], logger: logger)
        try await group.run()
    }
}
