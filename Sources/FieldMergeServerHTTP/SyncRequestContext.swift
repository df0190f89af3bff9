import FieldMergeServer
import Hummingbird
import NIOCore

/// A Hummingbird request context that carries who sent the request.
///
/// Authentication is middleware's job: a middleware in front of the sync routes verifies the
/// request (a bearer token, a client certificate) and sets ``syncIdentity``; the routes pass
/// it to the `RevisionServer`, whose `RevisionServer/Options/authorize` hook decides per
/// record, and whose stored replies belong to that identity.
public protocol SyncRequestContext: RequestContext {
    /// Who sent the request; nil for an anonymous one.
    var syncIdentity: SyncIdentity? { get set }
}

/// The context `fieldmerge serve` uses: Hummingbird's basic context, an identity that
/// middleware may set, and the client's address (`GET /metrics` without a token answers
/// loopback clients only).
public struct BasicSyncRequestContext: SyncRequestContext, RemoteAddressRequestContext {
    public var coreContext: CoreRequestContextStorage
    public var syncIdentity: SyncIdentity?
    public let remoteAddress: SocketAddress?

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        syncIdentity = nil
        remoteAddress = source.channel.remoteAddress
    }
}
