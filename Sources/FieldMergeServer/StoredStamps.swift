import FieldMerge

extension ServerRow {
    /// Stamps as storages keep them in one column (``RecordCoding/encodeStamps(_:into:)``).
    public static func encodeStamps(_ stamps: some Collection<Stamp>) -> [UInt8] {
        var bytes: [UInt8] = []
        RecordCoding.encodeStamps(stamps, into: &bytes)
        return bytes
    }

    /// The `count` stamps ``encodeStamps(_:)`` wrote, or nil when the bytes are damaged.
    public static func decodeStamps(_ bytes: UnsafeRawBufferPointer, count: Int) -> ContiguousArray<Stamp>? {
        try? RecordCoding.decodeStamps(bytes, count: count)
    }
}
