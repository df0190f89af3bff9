/// The device's end of the live channel (Specs/live.md): a stream of ``LiveEvent``s from the
/// server, beside the ``SyncTransport`` that carries requests.
///
/// Implementations: the in-process channel of a `RevisionServer` and, over HTTP, Server-Sent
/// Events (`GET /sync/events`) and long-poll (`GET /sync/poll`). `SyncClient`'s live mode
/// opens a channel, reacts to its events and opens it again when it ends or fails.
public protocol LiveChannel: Sendable {
    /// Opens the channel for a device whose cursor is `revision` and whose schema has the
    /// fingerprint `schema` (`Schema.fingerprint`): the server sends pages only to a device of
    /// its own schema version, pokes to any other (and to one that names none). An event
    /// stream's first event is ``LiveEvent/ready(revision:)`` (a long-poll's first is whatever
    /// its first poll answers); it finishes when the server ends the connection (each has a
    /// bounded lifetime) and throws when the channel fails (open it again later). Cancelling
    /// the task that iterates it closes the connection. Events may be dropped when the
    /// consumer lags (each names its revision: a device that missed one syncs).
    func events(since revision: Int64, schema: String?) -> AsyncThrowingStream<LiveEvent, any Error>

    /// ``events(since:schema:)`` for a device that also subscribes to `subscriptions`
    /// (``SyncRequest/subscriptions``, Specs/scopes.md §6): the server also tells it of
    /// changes under the subscribed roots its grants allow. A channel that cannot carry them
    /// ignores them (the default), and the device hears only of its user's grants.
    func events(since revision: Int64, schema: String?, subscriptions: ScopeHoldings?) -> AsyncThrowingStream<LiveEvent, any Error>
}

extension LiveChannel {
    public func events(since revision: Int64, schema: String?, subscriptions: ScopeHoldings?) -> AsyncThrowingStream<LiveEvent, any Error> {
        events(since: revision, schema: schema)
    }

    /// ``events(since:schema:)`` naming no schema: pokes only, never pages.
    public func events(since revision: Int64) -> AsyncThrowingStream<LiveEvent, any Error> {
        events(since: revision, schema: nil)
    }
}
