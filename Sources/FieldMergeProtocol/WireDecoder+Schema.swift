import FieldMerge

/// A request made with another schema than the codec's.
extension _Parser {
    /// The 409 for a request made with another schema: the same version with other contents
    /// is said so (an app shipped a changed schema without a new version, or the server
    /// runs another build of it); with the server's outline, so that the client can list the
    /// lines that differ. No byte offset: nothing is wrong with the body.
    static func incompatible(_ codec: WireCodec, version: Int?, fingerprint: String) -> WireError {
        let server = codec.schema.version
        let message = version == server
            ? "the request was made with another schema of the same version \(server) (fingerprint \(fingerprint), "
                + "the server's \(codec.schemaFingerprint)): the two differ although neither is newer; "
                + "give the changed one a new version"
            : "the request was made with another schema (version \(version.map(String.init) ?? "unknown"), fingerprint \(fingerprint)) "
                + "than the server's (version \(server), fingerprint \(codec.schemaFingerprint)): "
                + whichToUpdate(client: version, server: server)
        var error = WireError(.incompatibleSchema, message)
        error.schema = codec.schema.describedLines
        return error
    }

    /// Which side is behind, when the request said its version before its fingerprint.
    static func whichToUpdate(client: Int?, server: Int) -> String {
        guard let client else { return "update the app or the server" }
        return client < server ? "update the app" : "update the server"
    }
}
