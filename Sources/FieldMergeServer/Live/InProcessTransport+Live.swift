import FieldMergeProtocol

extension InProcessTransport: LiveChannel {
    /// The server's live events for this transport's identity (``LiveHub/subscribe(identity:takesPages:)``),
    /// as the HTTP channel would bring them. A subscription the hub refuses fails the stream
    /// with a ``TransportError`` (try again later); the stream finishes when the server closes.
    public func events(since revision: Int64, schema: String?) -> AsyncThrowingStream<LiveEvent, any Error> {
        events(since: revision, schema: schema, subscriptions: nil)
    }

    /// The events for a device that also subscribes to `subscriptions`.
    public func events(since revision: Int64, schema: String?, subscriptions: ScopeHoldings?) -> AsyncThrowingStream<LiveEvent, any Error> {
        let hub = server.live
        // A device of an older version the server answers gets pages in its version.
        let version = server.codec.version(fingerprint: schema)
        let takesPages = schema == server.codec.schemaFingerprint || version != nil
        let identity = identity
        return AsyncThrowingStream(bufferingPolicy: .bufferingNewest(max(1, hub.options.buffer))) { continuation in
            let events: AsyncStream<LiveEvent>
            do {
                // Its device is a `SyncClient`, which checks a scoped page's holdings.
                events = try hub.subscribe(identity: identity, takesPages: takesPages, subscriptions: subscriptions, scopedPages: true,
                    version: version)
            } catch {
                continuation.finish(throwing: TransportError("the server in this process refused a live subscription: \(error)"))
                return
            }
            let forward = Task {
                for await event in events { continuation.yield(event) }
                continuation.finish()
            }
            continuation.onTermination = { _ in forward.cancel() }
        }
    }
}
