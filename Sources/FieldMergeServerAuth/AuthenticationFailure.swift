import JWTKit

/// Why a request's bearer token is not accepted (answered 401 `unauthenticated`). The
/// message says what is wrong with the token and never repeats the token.
public struct AuthenticationFailure: Error, Equatable, Sendable, CustomStringConvertible {
    public var message: String

    public init(_ message: String) { self.message = message }

    /// The failure of verifying a token with jwt-kit, in words.
    init(verifying error: any Error) {
        guard let error = error as? JWTError else {
            self.init("the token cannot be verified")
            return
        }
        switch error.errorType {
        case .signatureVerificationFailed: self.init("the token's signature does not verify")
        case .malformedToken: self.init("the token is not a well-formed JWT")
        case .unknownKID, .missingKIDHeader, .noKeyProvided: self.init("the token is signed with a key the server does not know")
        case .unsupportedAlgorithm, .invalidHeaderField, .signingAlgorithmFailure: self.init("the token's algorithm is not one the server accepts")
        default: self.init("the token cannot be verified")
        }
    }

    public var description: String { message }
}
