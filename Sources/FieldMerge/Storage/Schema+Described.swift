/// The canonical description of a schema that a file made for it records (the device's
/// store, either server's storage), to recognise on open that the schema changed.
extension Schema {
    /// One line per entity and field (name, type, reference, strategies, delete policy), in
    /// order: what a file made for this schema records, and compares on open.
    package var describedLines: [String] { SchemaOutline(self).lines }

    /// What differs between the lines a file recorded and this schema's, in words.
    package func differences(fromStored stored: [String]) -> String {
        let expected = describedLines
        let storedSet = Set(stored), expectedSet = Set(expected)
        let missing = expected.filter { !storedSet.contains($0) }
        let extra = stored.filter { !expectedSet.contains($0) }
        var parts: [String] = []
        if !missing.isEmpty { parts.append("the file lacks: " + missing.map(Self.trimmed).joined(separator: "; ")) }
        if !extra.isEmpty { parts.append("the file has instead: " + extra.map(Self.trimmed).joined(separator: "; ")) }
        if parts.isEmpty { parts.append("the same entities and fields in another order") }
        return parts.joined(separator: "; ")
    }

    private static func trimmed(_ line: String) -> String { String(line.drop { $0 == " " }) }
}
