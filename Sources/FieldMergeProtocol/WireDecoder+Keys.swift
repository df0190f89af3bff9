/// Reading the keys of objects: the one loop body every document reader shares, which
/// finds a key among those an object knows and refuses one seen twice.
extension _Parser {
    /// The keys of the objects the protocol reads, each list in the order of the bits that
    /// mark them seen (`member`).
    static let requestKeys: [StaticString] = [
        "maxRevision", "changeSets", "clientID", "requestID", "limit", "protocolVersion", "schemaVersion", "schemaFingerprint",
        "scopes", "subscriptions", "priority", "horizon",
    ]
    static let responseKeys: [StaticString] = ["maxRevision", "changeSets", "hasMore", "scopes", "deniedSubscriptions", "horizon"]
    static let errorKeys: [StaticString] = ["error", "message", "schema"]
    static let changeSetKeys: [StaticString] = ["types", "conflict", "__refused__"]
    static let refusedKeys: [StaticString] = ["type", "id", "code", "message"]
    static let entityKeys: [StaticString] = ["attributes", "create", "update", "delete", "recreate", "leave"]
    static let recordKeys: [StaticString] = ["revision", "__oldId__", "__stamps__"]

    /// Reads the key of an object's next member: with its position in `keys` when it is one
    /// of them (marked in `seen`; a key seen twice is a `duplicateKey`), nil when it is not.
    @inline(__always)
    mutating func member(_ keys: [StaticString], _ seen: inout UInt16) throws(WireError) -> (known: Int?, key: _Span) {
        let key = try key()
        return (try known(key, keys, &seen), key)
    }

    /// The position of `key` in `keys`, marked in `seen` (a key seen twice is a
    /// `duplicateKey`); nil when it is none of them.
    @inline(__always)
    func known(_ key: _Span, _ keys: [StaticString], _ seen: inout UInt16) throws(WireError) -> Int? {
        for index in keys.indices where key.equals(keys[index]) {
            let bit: UInt16 = 1 << index
            guard seen & bit == 0 else { throw error(.duplicateKey, "duplicate key '\(key.text)'", at: key.offset) }
            seen |= bit
            return index
        }
        return nil
    }
}
