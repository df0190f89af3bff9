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

extension ServerRow {
    /// The quoted columns both SQL storages keep after a record's fields, in this order: the
    /// stamps (``encodeStamps(_:)``), the revision, the revision that created it, the field
    /// revisions (``encode(_:revision:)``, null while all changed at the revision) and the root.
    package static let metadataColumns = ["\"__fm_stamps\"", "\"__fm_revision\"", "\"__fm_created\"", "\"__fm_fields\"", "\"__fm_root\""]

    /// The definitions of ``metadataColumns`` in `CREATE TABLE`, with the storage's names of
    /// a byte string and a 64-bit integer.
    package static func metadataDefinitions(blob: String, integer: String) -> [String] {
        [
            "\"__fm_stamps\" \(blob) NOT NULL", "\"__fm_revision\" \(integer) NOT NULL", "\"__fm_created\" \(integer) NOT NULL",
            "\"__fm_fields\" \(blob)", "\"__fm_root\" \(integer)",
        ]
    }
}
