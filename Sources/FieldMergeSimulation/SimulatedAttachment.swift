import FieldMerge

extension Value {
    /// A canonical attachment reference made from `seed` (the simulation moves no bytes:
    /// the field merges like any other text).
    static func simulatedAttachment(_ seed: UInt64) -> Value {
        let digest = SHA256.hex(SHA256.hash((0..<8).map { UInt8(truncatingIfNeeded: seed >> ($0 * 8)) }))
        return .text("sha256:\(digest);\(seed % 10_000_000);application/octet-stream")
    }
}
