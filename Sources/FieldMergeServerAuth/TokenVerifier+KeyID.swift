import Foundation

extension TokenVerifier {
    /// Refuses a token whose `kid` names no key of the verifier, before its signature is
    /// checked (jwt-kit would otherwise verify it with its default key, the first one).
    ///
    /// A token with a `kid` must name one of ``keyIDs``: an HS256 secret has no id, so any
    /// `kid` is refused there. A token without one is verified with the only key when there
    /// is one, and refused when there are several.
    func checkKeyID(of token: String) throws(AuthenticationFailure) {
        let kid = try Self.header(of: token)["kid"]
        switch kid {
        case .none:
            if keyIDs.count > 1 { throw AuthenticationFailure("the token names no key ('kid') and the server has several") }
        case let kid as String:
            if !keyIDs.contains(kid) { throw AuthenticationFailure("the token is signed with a key the server does not know") }
        case .some:
            throw AuthenticationFailure("the token's 'kid' header is not a string")
        }
    }

    /// The JSON object of a compact JWT's header, unverified.
    private static func header(of token: String) throws(AuthenticationFailure) -> [String: Any] {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        var base64 = parts.first.map { $0.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/") } ?? ""
        base64 += String(repeating: "=", count: (4 - base64.count % 4) % 4)
        guard parts.count == 3, let data = Data(base64Encoded: base64),
            let header = try? JSONSerialization.jsonObject(with: data) as? [String: Any]
        else { throw AuthenticationFailure("the token is not a well-formed JWT") }
        return header
    }
}
