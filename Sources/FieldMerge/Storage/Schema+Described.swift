/// The canonical description of a schema that a file made for it records (the device's
/// store, either server's storage), to recognise on open that the schema changed.
extension Schema {
    /// One line per entity and field (name, type, reference, strategies, delete policy), in
    /// order: what a file made for this schema records, and compares on open.
    package var describedLines: [String] { SchemaOutline(self).lines }

    /// What differs between the lines a file recorded and this schema's, in words.
    package func differences(fromStored stored: [String]) -> String {
        differences(from: stored, lacks: "the file lacks", hasInstead: "the file has instead")
    }

    /// The lines of this schema's outline that `other` (another schema's ``describedLines``)
    /// lacks, and those it has instead, in words: `lacks` and `hasInstead` say whose they are.
    package func differences(from other: [String], lacks: String, hasInstead: String) -> String {
        let expected = describedLines
        let otherSet = Set(other), expectedSet = Set(expected)
        let missing = expected.filter { !otherSet.contains($0) }
        let extra = other.filter { !expectedSet.contains($0) }
        var parts: [String] = []
        if !missing.isEmpty { parts.append("\(lacks): " + missing.map(Self.trimmed).joined(separator: "; ")) }
        if !extra.isEmpty { parts.append("\(hasInstead): " + extra.map(Self.trimmed).joined(separator: "; ")) }
        if parts.isEmpty { parts.append("the same entities and fields in another order") }
        return parts.joined(separator: "; ")
    }

    private static func trimmed(_ line: String) -> String { String(line.drop { $0 == " " }) }
}
