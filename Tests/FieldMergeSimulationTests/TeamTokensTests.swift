import FieldMerge
@testable import FieldMergeSimulation
import FieldMergeWorkload
import Testing

/// The HS256 signing of the scoped run's tokens (`TeamTokens`): HMAC-SHA256 against RFC 4231's
/// test vectors, base64url without padding. (`ScopedSimulationOverHTTPTests` checks that the
/// server's verifier accepts the tokens.)
@Suite struct TeamTokensTests {
    @Test func hmacSHA256_matchesRFC4231() {
        // Test case 2: a short key.
        #expect(SHA256.hex(TeamTokens.hmacSHA256(key: Array("Jefe".utf8), Array("what do ya want for nothing?".utf8)))
            == "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843")
        // Test case 6: a key longer than the block, hashed first.
        let key = [UInt8](repeating: 0xAA, count: 131)
        #expect(SHA256.hex(TeamTokens.hmacSHA256(key: key, Array("Test Using Larger Than Block-Size Key - Hash Key First".utf8)))
            == "60e431591ee0b67f0d8a26aacbf5b77f8e0bc6213728c5140546040f0ee37f54")
    }

    @Test func base64URL_hasNoPaddingAndTheURLAlphabet() {
        #expect(TeamTokens.base64URL([0xFB, 0xFF]) == "-_8")
        #expect(TeamTokens.base64URL(Array(#"{"alg":"HS256","typ":"JWT"}"#.utf8)) == "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9")
    }

    @Test func aShortSecret_isRefused() {
        #expect(throws: SimulationError.self) { try TeamTokens(secret: Array("too short".utf8)) }
    }
}
