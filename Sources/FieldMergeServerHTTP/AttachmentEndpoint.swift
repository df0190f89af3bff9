import FieldMergeServer

extension SyncHTTPServer {
    /// The attachment endpoints, `PUT`, `HEAD` and `GET /attachments/<sha256>`
    /// (Specs/attachments.md): where the bytes are kept and how large one may be.
    public struct Attachments: Sendable {
        /// Where the bytes are kept (`DirectoryAttachmentStore` beside the SQLite file); nil:
        /// each server's own (`RevisionServer.Options.attachments`), which is how a
        /// multi-tenant endpoint keeps each tenant's bytes apart (a server without one
        /// answers 404).
        public var store: (any AttachmentStore)?
        /// The largest attachment accepted, in bytes: 256 MiB by default. A larger one is
        /// refused with 413 before any byte is read.
        public var maxBytes: Int64

        public init(store: (any AttachmentStore)? = nil, maxBytes: Int64 = 256 << 20) {
            precondition(maxBytes > 0, "maxBytes must be positive")
            self.store = store
            self.maxBytes = maxBytes
        }
    }
}
