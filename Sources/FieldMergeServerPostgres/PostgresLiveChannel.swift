/// The PostgreSQL NOTIFY channel on which the servers of one data set announce their commits
/// (``PostgresServerStorage/liveChannel``, ``PostgresLiveListener``).
public enum PostgresLiveChannel {
    /// What every channel name starts with.
    public static let prefix = "fieldmerge_"

    /// The channel of the data set in the PostgreSQL schema `schema`: `fieldmerge_<schema>`
    /// when that is a plain name (``PostgresIdentifier/isPlainName(_:)``) and the channel
    /// stays within 62 bytes; otherwise exactly 63 bytes: the prefix, the schema's first 35
    /// bytes with every byte other than a lower-case ASCII letter, a digit or an underscore
    /// made an underscore (padded with underscores), an underscore and the 16 hex digits of
    /// the FNV-1a 64-bit hash of the whole name's UTF-8 bytes.
    ///
    /// The same in every process and on every platform (no per-process hash seed); only
    /// lower-case ASCII letters, digits and underscores, at most 63 bytes (PostgreSQL's
    /// identifier limit, beyond which `LISTEN` would cut the name while `pg_notify` refuses
    /// it). The two forms differ in length, so no plain name's channel is a hashed one.
    public static func name(forSchema schema: String) -> String {
        if PostgresIdentifier.isPlainName(schema), prefix.utf8.count + schema.utf8.count < PostgresIdentifier.maxLength {
            return prefix + schema
        }
        let kept = schema.utf8.prefix(35).map { isPlain($0) ? Character(Unicode.Scalar($0)) : "_" }
        let padded = String(kept) + String(repeating: "_", count: 35 - kept.count)
        let hash = String(fnv1a(Array(schema.utf8)), radix: 16)
        return prefix + padded + "_" + String(repeating: "0", count: 16 - hash.count) + hash
    }

    private static func isPlain(_ byte: UInt8) -> Bool {
        byte == UInt8(ascii: "_") || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
            || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte)
    }

    /// FNV-1a, 64 bits: small, fixed, the same everywhere.
    static func fnv1a(_ bytes: [UInt8]) -> UInt64 {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in bytes {
            hash ^= UInt64(byte)
            hash &*= 0x0000_0100_0000_01B3
        }
        return hash
    }
}
