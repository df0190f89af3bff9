import FieldMergeServer
import Hummingbird

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

/// The context `fieldmerge serve` uses: Hummingbird's basic context and an identity that
/// middleware may set.
public struct BasicSyncRequestContext: SyncRequestContext {
    public var coreContext: CoreRequestContextStorage
    public var syncIdentity: SyncIdentity?

    public init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        syncIdentity = nil
    }
}
